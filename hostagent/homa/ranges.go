package homa

// span is the byte range [start, end) of a message.
type span struct{ start, end uint32 }

// rangeSet records which bytes of an inbound message have arrived: every
// byte below prefix, and beyond it sorted, disjoint, non-adjacent spans
// that all start above prefix. Packets arrive mostly in order, so the
// spans are usually empty and add only moves prefix, allocating nothing.
type rangeSet struct {
	prefix uint32
	spans  []span
}

// add records [start, end) and returns how many of its bytes were new.
func (r *rangeSet) add(start, end uint32) uint32 {
	start = max(start, r.prefix)
	if end <= start {
		return 0
	}
	if start == r.prefix && len(r.spans) == 0 { // the common in-order case
		r.prefix = end
		return end - start
	}
	fresh := r.insert(start, end)
	// Spans the prefix now reaches join it.
	k := 0
	for k < len(r.spans) && r.spans[k].start <= r.prefix {
		r.prefix = max(r.prefix, r.spans[k].end)
		k++
	}
	if k > 0 {
		r.spans = r.spans[:copy(r.spans, r.spans[k:])]
	}
	return fresh
}

// insert merges [start, end) into spans, every span that overlaps or
// touches it included, and returns how many of its bytes were new.
func (r *rangeSet) insert(start, end uint32) uint32 {
	n := len(r.spans)
	i := 0
	for i < n && r.spans[i].end < start {
		i++
	}
	j := i
	covered := uint32(0)
	ns, ne := start, end
	for j < n && r.spans[j].start <= end {
		s := r.spans[j]
		covered += min(s.end, end) - max(s.start, start) // >= 0: s overlaps or touches
		ns, ne = min(ns, s.start), max(ne, s.end)
		j++
	}
	if i == j {
		r.spans = append(r.spans, span{})
		copy(r.spans[i+1:], r.spans[i:])
		r.spans[i] = span{start, end}
		return end - start
	}
	r.spans[i] = span{ns, ne}
	r.spans = append(r.spans[:i+1], r.spans[j:]...)
	return end - start - covered
}

// gaps appends to dst the missing ranges below limit, at most maxGaps.
func (r *rangeSet) gaps(dst []span, limit uint32, maxGaps int) []span {
	next := r.prefix
	for _, s := range r.spans {
		if len(dst) >= maxGaps || next >= limit {
			return dst
		}
		if s.start > next {
			dst = append(dst, span{next, min(s.start, limit)})
		}
		next = s.end
	}
	if next < limit && len(dst) < maxGaps {
		dst = append(dst, span{next, limit})
	}
	return dst
}

// end is the end of the highest byte that arrived.
func (r *rangeSet) end() uint32 {
	if n := len(r.spans); n > 0 {
		return r.spans[n-1].end
	}
	return r.prefix
}

// reset forgets every range but keeps the storage.
func (r *rangeSet) reset() { r.prefix, r.spans = 0, r.spans[:0] }
