package testbed

import (
	"context"
	"errors"
	"log/slog"
)

// teeHandler sends records to two handlers.
type teeHandler struct{ a, b slog.Handler }

func (t teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return t.a.Enabled(ctx, l) || t.b.Enabled(ctx, l)
}

func (t teeHandler) Handle(ctx context.Context, rec slog.Record) error {
	var errs []error
	if t.a.Enabled(ctx, rec.Level) {
		errs = append(errs, t.a.Handle(ctx, rec.Clone()))
	}
	if t.b.Enabled(ctx, rec.Level) {
		errs = append(errs, t.b.Handle(ctx, rec))
	}
	return errors.Join(errs...)
}

func (t teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return teeHandler{t.a.WithAttrs(as), t.b.WithAttrs(as)}
}

func (t teeHandler) WithGroup(name string) slog.Handler {
	return teeHandler{t.a.WithGroup(name), t.b.WithGroup(name)}
}
