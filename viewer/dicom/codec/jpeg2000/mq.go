package jpeg2000

import "math/bits"

// The MQ arithmetic decoder (T.800 Annex C). A context is one byte: its state index
// times two plus its more probable symbol.

// mqQe, mqNMPS and mqNLPS are T.800 Table C.2 expanded to both values of the MPS: the
// LPS probability estimate and the next context byte after an MPS or an LPS.
var mqQe, mqNMPS, mqNLPS = func() (qe [94]uint32, nmps, nlps [94]uint8) {
	rows := [47][4]uint32{
		{0x5601, 1, 1, 1}, {0x3401, 2, 6, 0}, {0x1801, 3, 9, 0}, {0x0AC1, 4, 12, 0},
		{0x0521, 5, 29, 0}, {0x0221, 38, 33, 0}, {0x5601, 7, 6, 1}, {0x5401, 8, 14, 0},
		{0x4801, 9, 14, 0}, {0x3801, 10, 14, 0}, {0x3001, 11, 17, 0}, {0x2401, 12, 18, 0},
		{0x1C01, 13, 20, 0}, {0x1601, 29, 21, 0}, {0x5601, 15, 14, 1}, {0x5401, 16, 14, 0},
		{0x5101, 17, 15, 0}, {0x4801, 18, 16, 0}, {0x3801, 19, 17, 0}, {0x3401, 20, 18, 0},
		{0x3001, 21, 19, 0}, {0x2801, 22, 19, 0}, {0x2401, 23, 20, 0}, {0x2201, 24, 21, 0},
		{0x1C01, 25, 22, 0}, {0x1801, 26, 23, 0}, {0x1601, 27, 24, 0}, {0x1401, 28, 25, 0},
		{0x1201, 29, 26, 0}, {0x1101, 30, 27, 0}, {0x0AC1, 31, 28, 0}, {0x09C1, 32, 29, 0},
		{0x08A1, 33, 30, 0}, {0x0521, 34, 31, 0}, {0x0441, 35, 32, 0}, {0x02A1, 36, 33, 0},
		{0x0221, 37, 34, 0}, {0x0141, 38, 35, 0}, {0x0111, 39, 36, 0}, {0x0085, 40, 37, 0},
		{0x0049, 41, 38, 0}, {0x0025, 42, 39, 0}, {0x0015, 43, 40, 0}, {0x0009, 44, 41, 0},
		{0x0005, 45, 42, 0}, {0x0001, 45, 43, 0}, {0x5601, 46, 46, 0},
	}
	for s, r := range rows {
		for mps := range uint32(2) {
			i := 2*s + int(mps)
			qe[i], nmps[i], nlps[i] = r[0], uint8(2*r[1]+mps), uint8(2*r[2]+(mps^r[3]))
		}
	}
	return
}()

// mqDecoder decodes one codeword segment. Its data ends with two 0xFF bytes, which the
// decoder reads as a marker and never passes: past the end it feeds 1 bits (C.3.4).
type mqDecoder struct {
	data []byte
	pos  int
	a, c uint32
	ct   int
}

func (m *mqDecoder) init(data []byte) {
	m.data, m.pos = data, 0
	m.c = uint32(data[0]) << 16
	m.bytein()
	m.c <<= 7
	m.ct -= 7
	m.a = 0x8000
}

func (m *mqDecoder) bytein() {
	if m.data[m.pos] == 0xFF {
		if b := m.data[m.pos+1]; b > 0x8F {
			m.c += 0xFF00
			m.ct = 8
		} else {
			m.pos++
			m.c += uint32(b) << 9
			m.ct = 7
		}
		return
	}
	m.pos++
	m.c += uint32(m.data[m.pos]) << 8
	m.ct = 8
}

// decode decodes one symbol in context cx (T.800 C.3.2). The common case, an MPS that
// needs no renormalization, is small enough to be inlined into the coding passes.
func (m *mqDecoder) decode(cx *uint8) uint32 {
	st := *cx
	qe := mqQe[st]
	a := m.a - qe
	if a&0x8000 != 0 && m.c>>16 >= qe {
		m.a = a
		m.c -= qe << 16
		return uint32(st & 1)
	}
	return m.decodeSlow(cx, a)
}

// decodeSlow finishes decode when an exchange or renormalization is needed; a is the
// interval already reduced by Qe.
func (m *mqDecoder) decodeSlow(cx *uint8, a uint32) uint32 {
	st := *cx
	qe := mqQe[st]
	d := uint32(st & 1)
	c := m.c
	if c>>16 >= qe {
		// MPS path with renormalization (A fell below 0x8000): an exchange when A also
		// fell below Qe (T.800 Figure C.16).
		c -= qe << 16
		if a < qe {
			d ^= 1
			*cx = mqNLPS[st]
		} else {
			*cx = mqNMPS[st]
		}
	} else {
		// LPS path (T.800 Figure C.17).
		if a < qe {
			*cx = mqNMPS[st]
		} else {
			d ^= 1
			*cx = mqNLPS[st]
		}
		a = qe
	}
	// Renormalize: A < 0x8000 here. Usually C holds enough bits for the whole shift.
	if n := bits.LeadingZeros16(uint16(a)); n <= m.ct {
		m.a, m.c, m.ct = a<<n, c<<n, m.ct-n
		return d
	}
	m.a, m.c = a, c
	m.renorm()
	return d
}

func (m *mqDecoder) renorm() {
	// Shift A left until its bit 15 is set, C with it, reading a byte whenever CT runs
	// out: the loop of T.800 Figure C.18, several bits at a time.
	n := bits.LeadingZeros16(uint16(m.a))
	for {
		if m.ct == 0 {
			m.bytein()
		}
		s := min(n, m.ct)
		m.a <<= s
		m.c <<= s
		m.ct -= s
		if n -= s; n == 0 {
			return
		}
	}
}

// rawDecoder reads the raw bits of a bypassed pass (T.800 D.6): most significant first,
// 7 bits from a byte after 0xFF; its data also ends with two 0xFF bytes.
type rawDecoder struct {
	data []byte
	pos  int
	c    uint32
	ct   int
}

func (r *rawDecoder) init(data []byte) { *r = rawDecoder{data: data} }

func (r *rawDecoder) bit() uint32 {
	if r.ct == 0 {
		switch {
		case r.c != 0xFF:
			r.c, r.ct = uint32(r.data[r.pos]), 8
			r.pos++
		case r.data[r.pos] > 0x8F:
			r.ct = 8 // a marker: keep feeding its 1 bits
		default:
			r.c, r.ct = uint32(r.data[r.pos]), 7
			r.pos++
		}
	}
	r.ct--
	return r.c >> r.ct & 1
}
