package process

import "github.com/signalbox/signalbox/record"

// interpreted is x without its fast path: cel-go's interpreter only.
func (x *Expr) interpreted() *Expr {
	if x == nil {
		return nil
	}
	y := *x
	y.fast, y.render = nil, nil
	return &y
}

// InterpretedBool is Bool through cel-go's interpreter only.
func (x *Expr) InterpretedBool(r *record.Record) (bool, error) { return x.interpreted().Bool(r) }

// InterpretedApply is Apply through cel-go's interpreter only.
func (x *Expr) InterpretedApply(dst []byte, r *record.Record) ([]byte, error) {
	return x.interpreted().Apply(dst, r)
}

// Fast reports whether x has a fast path.
func (x *Expr) Fast() bool { return x.fast != nil || x.render != nil }

// Interpreted is s with both expressions through cel-go's interpreter only.
func (s Steps) Interpreted() Steps {
	return Steps{Filter: s.Filter.interpreted(), Map: s.Map.interpreted()}
}

// String names s's expressions, for a test's message.
func (s Steps) String() string {
	var f, m string
	if s.Filter != nil {
		f = s.Filter.src
	}
	if s.Map != nil {
		m = s.Map.src
	}
	return "filter " + f + ", map " + m
}
