package capture

// ExplainTimeout exposes explainTimeout to the external tests.
func (s *Source) ExplainTimeout(err error) error { return s.explainTimeout(err) }
