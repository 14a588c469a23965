package jpegls

import "testing"

// TestThresholds checks the default thresholds against T.87 Table C.3's values: at
// MAXVAL 255 and NEAR 0 they are 3, 7, 21; at 4095, 18, 67, 276; at 65535 the same (the
// factor stops growing at 4095); at MAXVAL 255 and NEAR 3, T1 = 3 + 3·3 = 12 etc.
func TestThresholds(t *testing.T) {
	for _, c := range []struct{ maxval, near, t1, t2, t3 int }{
		{255, 0, 3, 7, 21}, {4095, 0, 18, 67, 276}, {65535, 0, 18, 67, 276}, {255, 3, 12, 22, 42},
	} {
		th := defaultThresholds(c.maxval, c.near)
		if th.t1 != c.t1 || th.t2 != c.t2 || th.t3 != c.t3 {
			t.Errorf("MAXVAL %d NEAR %d: %d %d %d, want %d %d %d", c.maxval, c.near, th.t1, th.t2, th.t3, c.t1, c.t2, c.t3)
		}
	}
}
