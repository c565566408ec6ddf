package group

// codeGrid holds one error code per partition of a request:
// grid[i][j] answers topic i, partition j; 0 until decided.
type codeGrid [][]int16

// newCodeGrid sizes a grid for n topics, topic i having parts(i)
// partitions.
func newCodeGrid(n int, parts func(i int) int) codeGrid {
	g := make(codeGrid, n)
	for i := range g {
		g[i] = make([]int16, parts(i))
	}
	return g
}

// setAll answers every partition with code.
func (g codeGrid) setAll(code int16) {
	for i := range g {
		for j := range g[i] {
			g[i][j] = code
		}
	}
}

// fill answers every partition still undecided with code.
func (g codeGrid) fill(code int16) {
	for i := range g {
		for j := range g[i] {
			if g[i][j] == 0 {
				g[i][j] = code
			}
		}
	}
}

// commitTopicNames resolves the topics of an offset commit: by name, or by
// id (byID) through the configured lookup; "" for an unknown id.
func (c *Coordinator) commitTopicNames(n int, byID bool, topic func(i int) (string, [16]byte)) []string {
	names := make([]string, n)
	for i := range names {
		name, id := topic(i)
		switch {
		case !byID:
			names[i] = name
		case c.cfg.TopicName != nil:
			names[i], _ = c.cfg.TopicName(id)
		}
	}
	return names
}
