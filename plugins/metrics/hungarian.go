package metrics

import (
	"errors"
	"math"
)

// ErrInfeasible is returned by LinearSumAssignment when no complete assignment has a finite
// cost, or the cost matrix holds NaN or −Inf.
var ErrInfeasible = errors.New("cost matrix is infeasible")

// LinearSumAssignment solves the rectangular linear sum assignment problem exactly as
// scipy.optimize.linear_sum_assignment does (minimisation): cost is an nr×nc row-major
// matrix; every row is assigned when nr ≤ nc, every column otherwise. It returns the
// assigned (row, col) pairs sorted by row. The algorithm is the shortest augmenting path
// method of Jonker–Volgenant as described by Crouse (2016), the one scipy implements, with
// the same tie-breaking, so it returns the same assignment as scipy.
func LinearSumAssignment(cost []float64, nr, nc int) (rows, cols []int, err error) {
	if nr < 0 || nc < 0 || len(cost) != nr*nc {
		return nil, nil, errors.New("metrics: cost matrix size does not match its dimensions")
	}
	if nr == 0 || nc == 0 {
		return []int{}, []int{}, nil
	}
	for _, c := range cost {
		if math.IsNaN(c) || math.IsInf(c, -1) {
			return nil, nil, ErrInfeasible
		}
	}
	transposed := nr > nc
	if transposed {
		t := make([]float64, len(cost))
		for i := 0; i < nr; i++ {
			for j := 0; j < nc; j++ {
				t[j*nr+i] = cost[i*nc+j]
			}
		}
		cost, nr, nc = t, nc, nr
	}
	col4row, err := hungarianSolve(cost, nr, nc)
	if err != nil {
		return nil, nil, err
	}
	rows, cols = make([]int, nr), make([]int, nr)
	if !transposed {
		for i := 0; i < nr; i++ {
			rows[i], cols[i] = i, col4row[i]
		}
		return rows, cols, nil
	}
	// Transposed: rows of the solved problem are the caller's columns; sort by the
	// caller's row (scipy argsorts).
	row4 := make([]int, nc)
	for i := range row4 {
		row4[i] = -1
	}
	for i := 0; i < nr; i++ {
		row4[col4row[i]] = i
	}
	k := 0
	for r := 0; r < nc; r++ {
		if row4[r] >= 0 {
			rows[k], cols[k] = r, row4[r]
			k++
		}
	}
	return rows, cols, nil
}

// hungarianSolve assigns every row of an nr×nc matrix (nr ≤ nc) and returns col4row.
func hungarianSolve(cost []float64, nr, nc int) ([]int, error) {
	u := make([]float64, nr)
	v := make([]float64, nc)
	spc := make([]float64, nc)
	path := make([]int, nc)
	col4row := make([]int, nr)
	row4col := make([]int, nc)
	sr := make([]bool, nr)
	sc := make([]bool, nc)
	remaining := make([]int, nc)
	for i := range col4row {
		col4row[i] = -1
	}
	for j := range row4col {
		row4col[j] = -1
		path[j] = -1
	}
	for cur := 0; cur < nr; cur++ {
		// Shortest augmenting path from row cur.
		minVal := 0.0
		nrem := nc
		for it := 0; it < nc; it++ {
			remaining[it] = nc - it - 1
		}
		for i := range sr {
			sr[i] = false
		}
		for j := range sc {
			sc[j] = false
			spc[j] = math.Inf(1)
		}
		sink := -1
		i := cur
		for sink == -1 {
			index := -1
			lowest := math.Inf(1)
			sr[i] = true
			row := cost[i*nc : (i+1)*nc]
			ui := u[i]
			for it, j := range remaining[:nrem] {
				r := minVal + row[j] - ui - v[j] // scipy's order of operations
				sj := spc[j]
				if r < sj {
					path[j] = i
					spc[j] = r
					sj = r
				}
				if sj < lowest || (sj == lowest && row4col[j] == -1) {
					lowest = sj
					index = it
				}
			}
			minVal = lowest
			if math.IsInf(minVal, 1) {
				return nil, ErrInfeasible
			}
			j := remaining[index]
			if row4col[j] == -1 {
				sink = j
			} else {
				i = row4col[j]
			}
			sc[j] = true
			nrem--
			remaining[index] = remaining[nrem]
		}
		// Update the dual variables.
		u[cur] += minVal
		for i := 0; i < nr; i++ {
			if sr[i] && i != cur {
				u[i] += minVal - spc[col4row[i]]
			}
		}
		for j := 0; j < nc; j++ {
			if sc[j] {
				v[j] -= minVal - spc[j]
			}
		}
		// Augment along the path.
		j := sink
		for {
			i := path[j]
			row4col[j] = i
			col4row[i], j = j, col4row[i]
			if i == cur {
				break
			}
		}
	}
	return col4row, nil
}
