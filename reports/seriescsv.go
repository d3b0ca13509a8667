package reports

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// readSeriesCSV reads dir/file, a time-series CSV found by column names,
// and calls each with the key columns (strings) and the numeric columns
// (int64) of every row. A missing or empty file is no data; a missing
// column or a bad number is an error naming the file, line and column.
func readSeriesCSV(ctx context.Context, dir, file string, keys, nums []string, each func(keys []string, nums []int64)) error {
	name := filepath.Join(dir, file)
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", file, err)
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReaderSize(f, 1<<16))
	r.ReuseRecord = true
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s header: %w", name, err)
	}
	idx := make(map[string]int)
	for i, h := range header {
		idx[h] = i
	}
	var keyCol, numCol []int
	for _, cols := range []struct {
		names []string
		dst   *[]int
	}{{keys, &keyCol}, {nums, &numCol}} {
		for _, c := range cols.names {
			i, ok := idx[c]
			if !ok {
				return fmt.Errorf("%s: header lacks column %q", name, c)
			}
			*cols.dst = append(*cols.dst, i)
		}
	}
	r.FieldsPerRecord = len(header)
	k, v := make([]string, len(keys)), make([]int64, len(nums))
	for n := 0; ; n++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		if n&0xfff == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		for i, c := range keyCol {
			k[i] = rec[c]
		}
		for i, c := range numCol {
			if v[i], err = strconv.ParseInt(rec[c], 10, 64); err != nil {
				line, _ := r.FieldPos(0)
				return fmt.Errorf("%s line %d: column %s: %w", name, line, nums[i], err)
			}
		}
		each(k, v)
	}
}
