package sqlload

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// A Statement is one statement of SQL input, as the mariadb client would send
// it to the server.
type Statement struct {
	// Text is the statement without the comments and blank lines before it
	// and without its delimiter. Comments inside it, including executable
	// /*!NNNNN ... */ comments, are kept: the server needs them.
	Text string
	// Delim is the delimiter that ended the statement; it is empty for a
	// last statement that has none.
	Delim string
	// Line is the 1-based line on which Text starts.
	Line int
	// Offset is the byte offset in the input at which Text starts.
	Offset int64
}

// A Splitter reads SQL text and returns its statements one at a time, the way
// the mariadb command-line client splits its input: it honours DELIMITER
// lines, skips comments between statements, and finds delimiters only
// outside quotes and comments. It holds one statement in memory, never the
// whole input.
type Splitter struct {
	r     io.Reader
	buf   []byte // buf[0] is the first byte not yet returned
	eof   bool   // r is exhausted
	rerr  error  // a read error other than io.EOF, returned once buf is spent
	delim string
	line  int   // line number of buf[0]
	off   int64 // input offset of buf[0]
}

// readSize is how much the splitter asks its reader for at a time.
const readSize = 256 << 10

// NewSplitter returns a Splitter that reads r. The delimiter starts as ";".
func NewSplitter(r io.Reader) *Splitter {
	return &Splitter{r: r, delim: ";", line: 1}
}

// Delimiter returns the current delimiter.
func (s *Splitter) Delimiter() string { return s.delim }

// Next returns the next statement, or io.EOF after the last one.
func (s *Splitter) Next() (Statement, error) {
	for {
		start, err := s.skip()
		if err != nil {
			return Statement{}, err
		}
		if start < 0 {
			return Statement{}, io.EOF
		}
		s.consume(start)
		if ok, err := s.delimiterCommand(); err != nil {
			return Statement{}, err
		} else if ok {
			continue
		}
		end, dlen, err := s.scan()
		if err != nil {
			return Statement{}, err
		}
		st := Statement{
			Text:   string(s.buf[:end]),
			Delim:  string(s.buf[end : end+dlen]),
			Line:   s.line,
			Offset: s.off,
		}
		s.consume(end + dlen)
		if st.Text == "" { // a lone delimiter
			continue
		}
		return st, nil
	}
}

// consume drops the first n bytes of the buffer.
func (s *Splitter) consume(n int) {
	s.line += bytes.Count(s.buf[:n], []byte{'\n'})
	s.off += int64(n)
	s.buf = s.buf[n:]
}

// fill reads more input into the buffer; it reports false when there is none.
func (s *Splitter) fill() bool {
	if s.eof {
		return false
	}
	if cap(s.buf)-len(s.buf) < readSize {
		nb := make([]byte, len(s.buf), 2*cap(s.buf)+readSize)
		copy(nb, s.buf)
		s.buf = nb
	}
	for {
		n, err := s.r.Read(s.buf[len(s.buf):cap(s.buf)])
		s.buf = s.buf[:len(s.buf)+n]
		if err != nil {
			s.eof = true
			if !errors.Is(err, io.EOF) {
				s.rerr = err
			}
			return n > 0
		}
		if n > 0 {
			return true
		}
	}
}

// need makes sure at least n bytes follow position i, reading more input if
// it must; it reports whether they do.
func (s *Splitter) need(i, n int) bool {
	for len(s.buf)-i < n {
		if !s.fill() {
			return false
		}
	}
	return true
}

// skip passes over blanks and comments (but not executable comments) at the
// start of the buffer and returns the position of the first byte of a
// statement, or -1 at the end of the input.
func (s *Splitter) skip() (int, error) {
	i := 0
	for {
		if !s.need(i, 4) && i >= len(s.buf) {
			return s.atEnd()
		}
		c := s.buf[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '#' || isDashComment(s.buf[i:], s.eof):
			j, ok := s.lineEnd(i)
			if !ok {
				return s.atEnd() // a comment runs to the end of the input
			}
			i = j + 1
		case c == '/' && i+1 < len(s.buf) && s.buf[i+1] == '*' && !isExecutable(s.buf[i:]):
			j, ok := s.commentEnd(i + 2)
			if !ok {
				return s.atEnd()
			}
			i = j
		default:
			return i, nil
		}
	}
}

// atEnd is skip's result when the input ends: -1, or the read error that
// ended it.
func (s *Splitter) atEnd() (int, error) {
	if s.rerr != nil {
		return 0, fmt.Errorf("read: %w", s.rerr)
	}
	return -1, nil
}

// lineEnd returns the position of the next newline at or after i.
func (s *Splitter) lineEnd(i int) (int, bool) {
	for {
		if k := bytes.IndexByte(s.buf[i:], '\n'); k >= 0 {
			return i + k, true
		}
		i = len(s.buf)
		if !s.fill() {
			return 0, false
		}
	}
}

// commentEnd returns the position just after the "*/" that closes a block
// comment whose body starts at i.
func (s *Splitter) commentEnd(i int) (int, bool) {
	for {
		if k := bytes.Index(s.buf[i:], []byte("*/")); k >= 0 {
			return i + k + 2, true
		}
		if len(s.buf) > i+1 {
			i = len(s.buf) - 1 // the '*' may be the last byte read
		}
		if !s.fill() {
			return 0, false
		}
	}
}

// isDashComment reports whether b starts with a "-- " comment: two dashes and
// then a blank, a control character or the end of the input.
func isDashComment(b []byte, eof bool) bool {
	if len(b) < 2 || b[0] != '-' || b[1] != '-' {
		return false
	}
	if len(b) == 2 {
		return eof
	}
	return b[2] <= ' '
}

// isExecutable reports whether b starts with an executable comment, /*! or
// /*M!, which the server runs and so must be sent.
func isExecutable(b []byte) bool {
	return bytes.HasPrefix(b, []byte("/*!")) || bytes.HasPrefix(b, []byte("/*M!"))
}

// delimiterCommand handles a DELIMITER line at the start of the buffer: it
// sets the new delimiter, consumes the line and reports true.
func (s *Splitter) delimiterCommand() (bool, error) {
	const kw = "delimiter"
	s.need(0, len(kw)+1)
	if len(s.buf) < len(kw)+1 || !bytes.EqualFold(s.buf[:len(kw)], []byte(kw)) {
		return false, nil
	}
	if c := s.buf[len(kw)]; c != ' ' && c != '\t' {
		return false, nil
	}
	end, ok := s.lineEnd(len(kw))
	if !ok {
		end = len(s.buf)
	}
	d := bytes.Fields(s.buf[len(kw):end])
	if len(d) == 0 {
		return false, fmt.Errorf("line %d: DELIMITER needs a delimiter after it", s.line)
	}
	s.delim = string(d[0])
	if ok {
		end++
	}
	s.consume(end)
	return true, nil
}

// Scanner states inside a statement.
const (
	stCode = iota
	stQuote
	stLineComment
	stBlockComment
)

// scan finds the end of the statement that starts at buf[0]. It returns the
// position of its delimiter and the delimiter's length (0 at the end of the
// input).
func (s *Splitter) scan() (end, dlen int, err error) {
	state, quote := stCode, byte(0)
	d0 := s.delim[0]
	look := max(4, len(s.delim))
	i := 0
	for {
		if len(s.buf)-i < look && !s.eof {
			s.fill()
			continue
		}
		if i >= len(s.buf) {
			if s.rerr != nil {
				return 0, 0, fmt.Errorf("read: %w", s.rerr)
			}
			return len(s.buf), 0, nil
		}
		switch state {
		case stCode:
			c := s.buf[i]
			switch {
			case c == d0 && bytes.HasPrefix(s.buf[i:], []byte(s.delim)):
				return i, len(s.delim), nil
			case c == '\'' || c == '"' || c == '`':
				state, quote = stQuote, c
				i++
			case c == '#' || (c == '-' && isDashComment(s.buf[i:], s.eof)):
				state = stLineComment
				i++
			case c == '/' && i+1 < len(s.buf) && s.buf[i+1] == '*' && !isExecutable(s.buf[i:]):
				state = stBlockComment
				i += 2
			default:
				i++
			}
		case stQuote:
			k := bytes.IndexByte(s.buf[i:], quote)
			b := -1
			if quote != '`' {
				lim := len(s.buf) - i
				if k >= 0 {
					lim = k
				}
				b = bytes.IndexByte(s.buf[i:i+lim], '\\')
			}
			switch {
			case b >= 0: // a backslash escapes the next byte
				if i+b+1 >= len(s.buf) && !s.eof {
					i += b // read the escaped byte first
					s.fill()
					continue
				}
				i = min(i+b+2, len(s.buf))
			case k >= 0:
				state = stCode
				i += k + 1
			default:
				i = len(s.buf)
			}
		case stLineComment:
			if k := bytes.IndexByte(s.buf[i:], '\n'); k >= 0 {
				state = stCode
				i += k + 1
			} else {
				i = len(s.buf)
			}
		case stBlockComment:
			if k := bytes.Index(s.buf[i:], []byte("*/")); k >= 0 {
				state = stCode
				i += k + 2
			} else {
				i = max(i, len(s.buf)-1)
				if s.eof {
					i = len(s.buf)
				}
			}
		}
	}
}
