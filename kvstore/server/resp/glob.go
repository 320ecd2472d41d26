package resp

// globMatch reports whether s matches the Redis glob pattern p: '*' any run,
// '?' any byte, '[abc]', '[^a-z]' classes, '\' escapes the next byte. It
// runs in O(len(p)·len(s)) — one backtrack point, the last '*' — so no
// pattern can make it exponential.
func globMatch(p, s []byte) bool {
	pi, si := 0, 0
	starP, starS := -1, 0
	for si < len(s) {
		if pi < len(p) && p[pi] == '*' {
			starP, starS = pi, si
			pi++
			continue
		}
		if pi < len(p) {
			if ok, next := matchOne(p, pi, s[si]); ok {
				pi, si = next, si+1
				continue
			}
		}
		if starP < 0 {
			return false
		}
		starS++
		pi, si = starP+1, starS
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// matchOne matches the byte c against the pattern element at p[i]; it
// returns where the next element starts.
func matchOne(p []byte, i int, c byte) (bool, int) {
	switch p[i] {
	case '?':
		return true, i + 1
	case '\\':
		if i+1 < len(p) {
			return p[i+1] == c, i + 2
		}
		return c == '\\', i + 1
	case '[':
		return matchClass(p, i+1, c)
	default:
		return p[i] == c, i + 1
	}
}

// matchClass matches c against the class that starts after '[' at p[i]; an
// unterminated class ends with the pattern, as in Redis.
func matchClass(p []byte, i int, c byte) (bool, int) {
	negate := false
	if i < len(p) && p[i] == '^' {
		negate, i = true, i+1
	}
	matched := false
	for i < len(p) && p[i] != ']' {
		switch {
		case p[i] == '\\' && i+1 < len(p):
			matched = matched || p[i+1] == c
			i += 2
		case i+2 < len(p) && p[i+1] == '-' && p[i+2] != ']':
			lo, hi := p[i], p[i+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			matched = matched || (lo <= c && c <= hi)
			i += 3
		default:
			matched = matched || p[i] == c
			i++
		}
	}
	if i < len(p) {
		i++ // the ']'
	}
	return matched != negate, i
}

// literalPrefix is the part of a pattern before its first glob character:
// the engine can narrow a scan to it.
func literalPrefix(p []byte) (prefix []byte, exact bool) {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '*', '?', '[':
			return prefix, false
		case '\\':
			if i+1 < len(p) {
				i++
			}
		}
		prefix = append(prefix, p[i])
	}
	return prefix, true
}
