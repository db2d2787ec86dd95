package capture_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/template/templatetest"

	"github.com/pristinedb/pristine/internal/capture"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/template"
)

// upTo3000 is a derived table of n = 1..3000, in SQL both MariaDB (which
// also has seq_1_to_3000) and MySQL take.
const upTo3000 = "(SELECT a.d * 1000 + b.d * 100 + c.d * 10 + e.d + 1 AS n FROM (SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) a, (SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) b, (SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) c, (SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) e WHERE a.d < 3) x"

// bankSource starts a source with two account tables whose balances sum to
// 2 * 1000 * 3000 rows, split across tables and key ranges.
func bankSource(t *testing.T) (*mariadb.Instance, *sql.DB) {
	src := mariadbtest.Start(t)
	db := mariadbtest.Open(t, src, "")
	execAll(t, db,
		"CREATE DATABASE bank",
		"CREATE TABLE bank.a (id INT PRIMARY KEY, bal BIGINT NOT NULL) ENGINE=InnoDB",
		"CREATE TABLE bank.b (id INT PRIMARY KEY, bal BIGINT NOT NULL) ENGINE=InnoDB",
		"INSERT INTO bank.a SELECT n, 1000 FROM "+upTo3000,
		"INSERT INTO bank.b SELECT n, 1000 FROM "+upTo3000,
		"ANALYZE TABLE bank.a, bank.b",
	)
	return src, db
}

// transfer moves money between a row of a and a row of b in one
// transaction, keeping the total constant.
func transfer(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	amt := rand.IntN(50) + 1
	from, to := "a", "b"
	if rand.IntN(2) == 0 {
		from, to = to, from
	}
	if _, err := tx.ExecContext(ctx, "UPDATE bank."+from+" SET bal = bal - ? WHERE id = ?", amt, rand.IntN(3000)+1); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE bank."+to+" SET bal = bal + ? WHERE id = ?", amt, rand.IntN(3000)+1); err != nil {
		return err
	}
	return tx.Commit()
}

func TestConsistentWhileSourceChanges(t *testing.T) {
	st := templatetest.NewBuilder(t, "auto")
	srcIn, srcDB := bankSource(t)
	ctx, cancel := context.WithCancel(context.Background())
	var transfers atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Go(func() {
			for ctx.Err() == nil {
				if err := transfer(ctx, srcDB); err == nil {
					transfers.Add(1)
				}
			}
		})
	}
	defer func() { cancel(); wg.Wait() }()
	// Writes run before, during and after the snapshot; the hook makes sure
	// some commit after it, while rows are being read.
	afterSnapshot := func(ctx context.Context) error {
		n := transfers.Load()
		for transfers.Load() < n+50 {
			time.Sleep(time.Millisecond)
		}
		return nil
	}
	m, _, err := st.Build(context.Background(), template.BuildOptions{Name: "bank", Profile: mariadb.DefaultProfile(), Workers: 4,
		Server: template.ServerSource{DSN: sourceURL(srcIn, "root", ""), Method: "logical", AfterSnapshot: afterSnapshot}})
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if transfers.Load() < 50 {
		t.Fatalf("only %d transfers ran during the capture", transfers.Load())
	}
	r, err := st.Start(context.Background(), m, "bank-check")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	db, err := r.Inst.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sum := queryString(t, db, "SELECT (SELECT SUM(bal) FROM bank.a) + (SELECT SUM(bal) FROM bank.b)")
	if sum != "6000000" {
		t.Fatalf("sum of balances in the template = %s, want 6000000: the snapshot was not consistent", sum)
	}
	if src := queryString(t, srcDB, "SELECT (SELECT SUM(bal) FROM bank.a) + (SELECT SUM(bal) FROM bank.b)"); src != "6000000" {
		t.Fatalf("the source itself sums to %s", src)
	}
	if !strings.Contains(m.Inputs[0], "marker=time") {
		t.Errorf("a source without a binary log must be marked by capture time: %q", m.Inputs[0])
	}
}

func TestFailuresLeaveNothing(t *testing.T) {
	srcIn, srcDB := bankSource(t)
	execAll(t, srcDB,
		"CREATE USER 'cap'@'localhost' IDENTIFIED BY 'cap-pass'",
		"GRANT ALL PRIVILEGES ON *.* TO 'cap'@'localhost'",
		"CREATE USER 'reader'@'localhost' IDENTIFIED BY 'reader-pass'",
		"GRANT SELECT ON bank.* TO 'reader'@'localhost'",
		"CREATE VIEW bank.rich AS SELECT * FROM bank.a WHERE bal > 1000",
	)
	killOne := func(ctx context.Context) error {
		var id int64
		err := srcDB.QueryRowContext(ctx, `SELECT p.ID FROM information_schema.PROCESSLIST p
		 JOIN information_schema.INNODB_TRX x ON x.trx_mysql_thread_id = p.ID WHERE p.USER='cap' LIMIT 1`).Scan(&id)
		if err != nil {
			return err
		}
		_, err = srcDB.ExecContext(ctx, fmt.Sprintf("KILL %d", id)) // MySQL takes no parameter in KILL
		return err
	}
	var locker *sql.Conn
	for _, tc := range []struct {
		name      string
		url       string
		setup     func(t *testing.T)
		hook      func(ctx context.Context) error
		lockWait  time.Duration
		wantErr   string
		privilege bool
	}{
		{name: "connection killed", url: sourceURL(srcIn, "cap", "cap-pass"), hook: killOne, wantErr: "killed"},
		{name: "lock wait timeout", url: sourceURL(srcIn, "cap", "cap-pass"), lockWait: time.Second, wantErr: "Lock wait timeout",
			setup: func(t *testing.T) {
				c, err := srcDB.Conn(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if _, err := c.ExecContext(context.Background(), "LOCK TABLES bank.a WRITE"); err != nil {
					t.Fatal(err)
				}
				locker = c
				t.Cleanup(func() { c.ExecContext(context.Background(), "UNLOCK TABLES"); c.Close() })
			}},
		{name: "missing privilege", url: sourceURL(srcIn, "reader", "reader-pass"), wantErr: "lacks SHOW VIEW on `bank`.*", privilege: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := templatetest.NewBuilder(t, "auto")
			if tc.setup != nil {
				tc.setup(t)
			}
			_, _, err := st.Build(context.Background(), template.BuildOptions{Name: "bank", Profile: mariadb.DefaultProfile(), Workers: 2,
				Server: template.ServerSource{DSN: tc.url, Method: "logical", AfterSnapshot: tc.hook, LockWait: tc.lockWait}})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("build error = %v, want one saying %q", err, tc.wantErr)
			}
			t.Logf("error: %v", err)
			if tc.privilege != errors.Is(err, capture.ErrPrivilege) {
				t.Errorf("errors.Is(err, ErrPrivilege) = %v, want %v", !tc.privilege, tc.privilege)
			}
			if strings.Contains(err.Error(), "-pass") {
				t.Errorf("the error shows a password: %v", err)
			}
			checkNothingLeft(t, st)
		})
	}
	_ = locker
}

func TestGTIDMarkerReusesTemplateUntilTheSourceChanges(t *testing.T) {
	bin := mariadbtest.Binary(t)
	st := templatetest.NewBuilder(t, "auto")
	in := mariadbtest.StartBinlog(t)
	db := mariadbtest.Open(t, in, "")
	execAll(t, db, "CREATE DATABASE g", "CREATE TABLE g.t (id INT PRIMARY KEY)", "INSERT INTO g.t VALUES (1)")
	opt := template.BuildOptions{Name: "g", Profile: mariadb.DefaultProfile(), Server: template.ServerSource{DSN: sourceURL(in, "root", ""), Method: "logical"}}
	m1, built, err := st.Build(context.Background(), opt)
	if err != nil || !built {
		t.Fatalf("first build: built=%v err=%v", built, err)
	}
	want := "marker=gtid 0-7-" // MariaDB's domain-server-sequence
	if bin.Flavor == mariadb.MySQL {
		want = "marker=gtid " + queryString(t, db, "SELECT @@server_uuid") + ":" // MySQL's uuid:interval
	}
	if !strings.Contains(m1.Inputs[0], want) {
		t.Errorf("a source with a binary log must be marked by its GTID position: %q", m1.Inputs[0])
	}
	m2, built, err := st.Build(context.Background(), opt)
	if err != nil || built || m2.Hash != m1.Hash {
		t.Fatalf("unchanged source: built=%v same hash=%v err=%v; want the template reused", built, m2.Hash == m1.Hash, err)
	}
	execAll(t, db, "INSERT INTO g.t VALUES (2)")
	m3, built, err := st.Build(context.Background(), opt)
	if err != nil || !built || m3.Hash == m1.Hash {
		t.Fatalf("changed source: built=%v same hash=%v err=%v; want a new capture", built, m3.Hash == m1.Hash, err)
	}
}
