package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// Charts draws the report's charts into dir: one per workload (time to N
// copies for every method, log scale) and one of reset time against
// template size. It returns the files' names, relative to dir.
func Charts(dir string, rep *Report) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	for _, wl := range rep.Workloads {
		c := &barChart{Title: fmt.Sprintf("%s (%d tables, %.0f MB): time to N copies", wl.Name, wl.Tables, wl.TemplateMB), YLabel: "seconds (log scale)", Log: true}
		idx := map[int]int{}
		for _, row := range rep.Rows {
			if row.Workload == wl.Name {
				if _, ok := idx[row.Copies]; !ok {
					idx[row.Copies] = len(c.Groups)
					c.Groups = append(c.Groups, strconv.Itoa(row.Copies)+" copies")
				}
			}
		}
		seriesOf := map[string]int{}
		for _, row := range rep.Rows {
			if row.Workload != wl.Name || row.Error != "" {
				continue
			}
			s, ok := seriesOf[row.Label()]
			if !ok {
				s = len(c.Series)
				seriesOf[row.Label()] = s
				c.Series = append(c.Series, series{Name: row.Label(), Values: make([]float64, len(c.Groups)), Projected: make([]bool, len(c.Groups))})
			}
			c.Series[s].Values[idx[row.Copies]] = row.Seconds
			c.Series[s].Projected[idx[row.Copies]] = row.Projected
		}
		name := "copies-" + wl.Name + ".png"
		if err := c.writePNG(filepath.Join(dir, name)); err != nil {
			return nil, err
		}
		files = append(files, name)
	}
	if len(rep.Service) > 0 {
		c := &barChart{Title: "reset of a released slot against template size", YLabel: "milliseconds",
			Series: []series{{Name: "p50"}, {Name: "p99"}, {Name: "max"}}}
		for _, s := range rep.Service {
			if s.Error != "" || s.Resets == 0 {
				continue
			}
			c.Groups = append(c.Groups, fmt.Sprintf("%.0f MB", s.TemplateMB))
			c.Series[0].Values = append(c.Series[0].Values, s.ResetP50MS)
			c.Series[1].Values = append(c.Series[1].Values, s.ResetP99MS)
			c.Series[2].Values = append(c.Series[2].Values, s.ResetMaxMS)
		}
		if len(c.Groups) > 0 {
			if err := c.writePNG(filepath.Join(dir, "reset.png")); err != nil {
				return nil, err
			}
			files = append(files, "reset.png")
		}
	}
	return files, nil
}

// Save writes the report to dir: bench.json, the charts, and bench.md
// (the tables, linking the charts).
func Save(dir string, rep *Report) error {
	files, err := Charts(dir, rep)
	if err != nil {
		return fmt.Errorf("bench: charts: %w", err)
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "bench.json"), append(js, '\n')); err != nil {
		return err
	}
	var md bytes.Buffer
	if err := Markdown(&md, rep, files); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, "bench.md"), md.Bytes())
}

// Load reads a report Save wrote.
func Load(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	// Runs saved before lower bounds counted the setup apart are derived
	// again from their raw figures (setup and time limit).
	for i := range rep.Rows {
		row := &rep.Rows[i]
		if row.LowerBound {
			row.Seconds = round3(lowerBound(row.SetupSeconds, row.MeasuredSeconds, row.Copies, row.Workers))
			row.CopiesPerMinute = round3(float64(row.Copies) / row.Seconds * 60)
		}
	}
	for _, wl := range rep.Workloads {
		var idx []int
		for i := range rep.Rows {
			if rep.Rows[i].Workload == wl.Name {
				idx = append(idx, i)
			}
		}
		rows := make([]Row, len(idx))
		for j, i := range idx {
			rows[j] = rep.Rows[i]
		}
		ratios(rows)
		for j, i := range idx {
			rep.Rows[i].Ratio = rows[j].Ratio
		}
	}
	return &rep, nil
}

// writeFile writes b to path through writeAtomic.
func writeFile(path string, b []byte) error {
	return writeAtomic(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// writeAtomic writes path through path+".tmp", renamed into place once
// write has returned and the file is closed: a reader never sees a
// report, chart or workload half-written.
func writeAtomic(path string, write func(io.Writer) error) error {
	f, err := os.OpenFile(path+".tmp", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}
