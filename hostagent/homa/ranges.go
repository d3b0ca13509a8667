package homa

// span is the byte range [start, end) of a message.
type span struct{ start, end uint32 }

// rangeSet records which bytes of an inbound message have arrived, as
// sorted, disjoint, non-adjacent spans. Packets arrive mostly in order, so
// the set is usually one span and add is O(1).
type rangeSet struct{ spans []span }

// add records [start, end) and returns how many of its bytes were new.
func (r *rangeSet) add(start, end uint32) uint32 {
	n := len(r.spans)
	if n == 0 || start > r.spans[n-1].end {
		r.spans = append(r.spans, span{start, end})
		return end - start
	}
	if start == r.spans[n-1].end { // the common in-order case
		r.spans[n-1].end = end
		return end - start
	}
	// General case: merge every span that overlaps or touches [start,end).
	i := 0
	for i < n && r.spans[i].end < start {
		i++
	}
	j := i
	covered := uint32(0)
	ns, ne := start, end
	for j < n && r.spans[j].start <= end {
		s := r.spans[j]
		covered += min(s.end, end) - max(s.start, start)
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
	next := uint32(0)
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

// reset forgets every range but keeps the storage.
func (r *rangeSet) reset() { r.spans = r.spans[:0] }
