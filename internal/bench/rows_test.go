package bench

import (
	"strings"
	"testing"
)

func TestStripIndexes(t *testing.T) {
	create := "CREATE TABLE `orders` (\n" +
		"  `id` int(10) unsigned NOT NULL,\n" +
		"  `customer_id` int(10) unsigned NOT NULL,\n" +
		"  `code` varchar(24) NOT NULL,\n" +
		"  PRIMARY KEY (`id`),\n" +
		"  UNIQUE KEY `uq_code` (`code`),\n" +
		"  KEY `idx_customer_id` (`customer_id`),\n" +
		"  CONSTRAINT `orders_ibfk_1` FOREIGN KEY (`customer_id`) REFERENCES `customers` (`id`)\n" +
		") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
	for _, tc := range []struct {
		name, in, wantCreate string
		wantAdds             []string
	}{
		{"indexes and foreign keys", create,
			"CREATE TABLE `orders` (\n  `id` int(10) unsigned NOT NULL,\n  `customer_id` int(10) unsigned NOT NULL,\n  `code` varchar(24) NOT NULL,\n  PRIMARY KEY (`id`)\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
			[]string{"UNIQUE KEY `uq_code` (`code`)", "KEY `idx_customer_id` (`customer_id`)", "CONSTRAINT `orders_ibfk_1` FOREIGN KEY (`customer_id`) REFERENCES `customers` (`id`)"}},
		{"primary key only", "CREATE TABLE `t` (\n  `id` int NOT NULL,\n  PRIMARY KEY (`id`)\n) ENGINE=InnoDB",
			"CREATE TABLE `t` (\n  `id` int NOT NULL,\n  PRIMARY KEY (`id`)\n) ENGINE=InnoDB", nil},
		{"a column named like a key", "CREATE TABLE `t` (\n  `KEY ` int NOT NULL,\n  PRIMARY KEY (`KEY `)\n) ENGINE=InnoDB",
			"CREATE TABLE `t` (\n  `KEY ` int NOT NULL,\n  PRIMARY KEY (`KEY `)\n) ENGINE=InnoDB", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, adds := stripIndexes(tc.in)
			if got != tc.wantCreate {
				t.Errorf("create:\n%s\nwant:\n%s", got, tc.wantCreate)
			}
			if strings.Join(adds, "|") != strings.Join(tc.wantAdds, "|") {
				t.Errorf("adds %q, want %q", adds, tc.wantAdds)
			}
		})
	}
}

func TestCopyRows(t *testing.T) {
	proto := Row{Workload: "w", Method: MethodDumpLoad, Workers: 1}
	points := map[int]checkpoint{1: {seconds: 3, cpu: 2, rss: 100 << 20, disk: 10 << 20}}
	for _, tc := range []struct {
		name          string
		done          []float64
		stopped       string
		want          []float64 // seconds per count 1, 10, 200
		wantProjected []bool
	}{
		{"all measured", seq(1, 200), "", []float64{3, 12, 202}, []bool{false, false, false}},
		// setup 2 s, 3 copies done at 3, 4, 5: 1 s per copy.
		{"stopped after three", []float64{3, 4, 5}, "max-time", []float64{3, 12, 202}, []bool{false, true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			last := checkpoint{seconds: tc.done[len(tc.done)-1], cpu: 6, rss: 100 << 20, disk: 30 << 20}
			rows := copyRows(proto, []int{1, 10, 200}, 2, tc.done, points, last, tc.stopped)
			for i, r := range rows {
				if r.Seconds != tc.want[i] || r.Projected != tc.wantProjected[i] {
					t.Errorf("copies %d: seconds %v projected %v, want %v %v", r.Copies, r.Seconds, r.Projected, tc.want[i], tc.wantProjected[i])
				}
				if r.Projected && (r.Stopped != tc.stopped || r.Measured != len(tc.done)) {
					t.Errorf("copies %d: stopped %q measured %d", r.Copies, r.Stopped, r.Measured)
				}
				if r.Projected && !strings.Contains(r.markdown(), "**projected**") {
					t.Errorf("projected row not marked: %s", r.markdown())
				}
			}
		})
	}
}

// seq is the completion times of copies made one a second after a 2 s
// setup, from..to.
func seq(from, to int) []float64 {
	var out []float64
	for i := from; i <= to; i++ {
		out = append(out, float64(i+2))
	}
	return out
}

func TestLowerBounds(t *testing.T) {
	for _, tc := range []struct {
		workers int
		want    []float64 // copies 1, 10
	}{
		{1, []float64{92, 902}},   // setup 2 s, then each copy more than 90 s
		{4, []float64{24.5, 227}}, // four copies at a time
	} {
		rows := lowerBounds(Row{Method: MethodImport}, []int{1, 10}, 2, 90, tc.workers)
		for i, r := range rows {
			if r.Seconds != tc.want[i] || !r.LowerBound || !r.Projected {
				t.Errorf("workers %d, copies %d: %+v, want %v seconds as a lower bound", tc.workers, r.Copies, r, tc.want[i])
			}
			if !strings.Contains(r.markdown(), "at least") {
				t.Errorf("lower bound not marked: %s", r.markdown())
			}
		}
	}
}
