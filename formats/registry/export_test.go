package registry

// CachedEntries is how many ids, GUIDs and references c holds, found or not.
func (c *Client) CachedEntries() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byID) + len(c.byRef)
}
