package capture

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/pristinedb/pristine/internal/quote"

	"github.com/go-sql-driver/mysql"
)

// A piece is one chunk on its way from a reader to its table's loader.
type piece struct {
	c      chunk
	stream bool           // the table's only chunk: streamed through a pipe, not buffered
	out    chan io.Reader // receives the chunk's rows as LOAD DATA text
}

// loadTables copies tables with one LOAD DATA statement per table, so that
// InnoDB's bulk insert into an empty table applies (rows sorted into each
// index, no undo log); statements running in parallel on one table would
// lose it, and measured slower. A big table's key ranges are still read in
// parallel on the snapshot connections: each range is buffered in memory
// and fed to the table's statement in key order. At most two ranges per
// connection wait in memory. Tables load in parallel on as many target
// sessions as there are snapshot connections.
func loadTables(ctx context.Context, sn *snapshot, dst *sql.DB, order []*table, chunks map[*table][]chunk, n *counters) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w := len(sn.conns)
	tokens := make(chan struct{}, 2*w)
	type job struct {
		t      *table
		pieces []*piece
	}
	var jobs []job
	for _, t := range order {
		cs := chunks[t]
		if len(cs) == 0 {
			continue
		}
		j := job{t: t}
		for _, c := range cs {
			j.pieces = append(j.pieces, &piece{c: c, stream: len(cs) == 1, out: make(chan io.Reader, 1)})
		}
		jobs = append(jobs, j)
	}
	pieceQ := make(chan *piece)
	go func() {
		defer close(pieceQ)
		for _, j := range jobs {
			for _, p := range j.pieces {
				select {
				case tokens <- struct{}{}:
				case <-ctx.Done():
					return
				}
				select {
				case pieceQ <- p:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	tableQ := make(chan job, len(jobs))
	for _, j := range jobs {
		tableQ <- j
	}
	close(tableQ)
	var wg sync.WaitGroup
	for i := 0; i < w; i++ {
		conn := sn.conns[i]
		wg.Go(func() {
			for p := range pieceQ {
				if err := readPiece(ctx, conn, p, n); err != nil {
					cancel(err)
					return
				}
			}
		})
		wg.Go(func() {
			d, err := targetSession(ctx, dst, false)
			if err != nil {
				cancel(err)
				return
			}
			defer d.Close()
			for j := range tableQ {
				if ctx.Err() != nil {
					return
				}
				if err := loadTable(ctx, d, j.t, j.pieces, tokens); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// readPiece reads a chunk on a snapshot connection: into a pipe the loader
// is already reading, or into memory.
func readPiece(ctx context.Context, conn *sql.Conn, p *piece, n *counters) error {
	if p.stream {
		pr, pw := io.Pipe()
		stop := context.AfterFunc(ctx, func() { pr.CloseWithError(context.Cause(ctx)) })
		defer stop()
		p.out <- pr
		err := readChunk(ctx, conn, p.c, pw, n)
		pw.CloseWithError(err)
		if errors.Is(err, io.ErrClosedPipe) {
			return nil // the loader stopped first and reports why
		}
		return err
	}
	var buf bytes.Buffer
	if err := readChunk(ctx, conn, p.c, &buf, n); err != nil {
		return err
	}
	p.out <- bytes.NewReader(buf.Bytes())
	return nil
}

func readChunk(ctx context.Context, conn *sql.Conn, c chunk, w io.Writer, n *counters) error {
	if err := writeTSV(ctx, conn, c.selectSQL(), w, n); err != nil {
		return fmt.Errorf("read %s: %w", c, err)
	}
	return nil
}

// pieceReader reads a table's pieces one after the other, giving back a
// memory token as each one ends.
type pieceReader struct {
	ctx    context.Context
	pieces []*piece
	cur    io.Reader
	tokens chan struct{}
}

func (r *pieceReader) Read(b []byte) (int, error) {
	for {
		if len(r.pieces) == 0 {
			return 0, io.EOF
		}
		if r.cur == nil {
			select {
			case r.cur = <-r.pieces[0].out:
			case <-r.ctx.Done():
				return 0, context.Cause(r.ctx)
			}
		}
		n, err := r.cur.Read(b)
		if err == io.EOF {
			r.cur, r.pieces = nil, r.pieces[1:]
			<-r.tokens
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

// close stops a stream piece's reader when the statement ended early.
func (r *pieceReader) close() {
	if pr, ok := r.cur.(*io.PipeReader); ok {
		pr.CloseWithError(io.ErrClosedPipe)
	}
}

// loadTable runs one LOAD DATA LOCAL INFILE for a table, reading its pieces
// in key order.
func loadTable(ctx context.Context, d *sql.Conn, t *table, pieces []*piece, tokens chan struct{}) error {
	name := "pristine-capture-" + strconv.FormatInt(loadSeq.Add(1), 10)
	r := &pieceReader{ctx: ctx, pieces: pieces, tokens: tokens}
	mysql.RegisterReaderHandler(name, func() io.Reader { return r })
	defer mysql.DeregisterReaderHandler(name)
	var cols, sets []string
	for i, col := range t.cols {
		if col.bit {
			v := "@v" + strconv.Itoa(i)
			cols = append(cols, v)
			sets = append(sets, quote.Ident(col.name)+"=CAST("+v+" AS UNSIGNED)")
		} else if col.json {
			// MySQL refuses JSON from a binary string (MariaDB's JSON is
			// LONGTEXT, which takes it either way).
			v := "@v" + strconv.Itoa(i)
			cols = append(cols, v)
			sets = append(sets, quote.Ident(col.name)+"=CONVERT("+v+" USING utf8mb4)")
		} else {
			cols = append(cols, quote.Ident(col.name))
		}
	}
	q := "LOAD DATA LOCAL INFILE 'Reader::" + name + "' INTO TABLE " + t.quoted() + " CHARACTER SET binary (" + strings.Join(cols, ",") + ")"
	if len(sets) > 0 {
		q += " SET " + strings.Join(sets, ", ")
	}
	_, err := d.ExecContext(ctx, q)
	r.close()
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			return cause // a reader failed first: its error says more
		}
		return fmt.Errorf("write %s: %w", t, err)
	}
	if len(r.pieces) > 0 {
		return fmt.Errorf("write %s: the statement ended before its rows", t)
	}
	return nil
}
