package formats

// Compiles is how many schemas of format f c has compiled.
func (c *Codecs) Compiles(f Format) int {
	cs := c.formats[f]
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.compiles
}
