// Command small-culprit measures how perfbisect's default search does on a
// real server with a small regression: for each trial it generates a fixture
// of N commits with make-fixture.sh --small-culprit (the optimizer trace on,
// about -12% with 1000-row ranges) at a culprit position drawn from the
// trial's seed, runs `perfbisect start` on it (oltp_read_only, 100,000 rows,
// 1000-row ranges, 1.5 s windows; server on CPU 1, client on CPU 0 when
// there are two CPUs), and prints one
// row per trial and a summary: the answer (exact, range holding the culprit,
// wrong, no regression), runs spent against the pre-flight estimate, the
// smallest change the pre-flight said this machine resolves, the endpoints'
// measured shift and noise, and the wall time.
//
//	go run ./scripts/small-culprit [flags]
//	go run ./scripts/small-culprit -commits 40 -trials 5 -out /tmp/small.tsv
//
// Flags: -commits N (40), -trials K (3), -seed S (1), -out FILE (a TSV of the
// finished trials, after a "#" line with the parameters; an existing file is
// read first and its trials are not run again, so an interrupted run
// resumes; one made with other parameters is refused; a trial that ended in
// an error is not kept), -confidence C (the default when 0),
// -time SECONDS (1.5), -keep (keep the fixtures and state directories). It
// builds perfbisect from this checkout, starts servers and takes minutes per
// trial: run it on an idle machine, never beside a build or another
// measurement.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// row is one finished trial.
type row struct {
	Trial, Pos             int
	Answer                 string // exact, range, wrong, missed, error
	Runs, Estimate         int
	Smallest, Shift, Noise float64 // percent
	Wall                   time.Duration
}

func (r row) tsv() string {
	return fmt.Sprintf("%d\t%d\t%s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.0f", r.Trial, r.Pos, r.Answer, r.Runs, r.Estimate, r.Smallest, r.Shift, r.Noise, r.Wall.Seconds())
}

func main() {
	commits := flag.Int("commits", 40, "commits after the good one")
	trials := flag.Int("trials", 3, "bisections to run")
	seed := flag.Uint64("seed", 1, "seed of the culprit positions")
	out := flag.String("out", "", "TSV of finished trials (read first: a rerun resumes)")
	conf := flag.Float64("confidence", 0, "--confidence of start (0: its default)")
	window := flag.String("time", "1.5", "--time of start (seconds)")
	keep := flag.Bool("keep", false, "keep the fixtures and state directories")
	flag.Parse()
	if flag.NArg() != 0 || *commits < 4 || *trials < 1 || *conf != 0 && !(*conf >= 0.5 && *conf < 1) {
		fmt.Fprintln(os.Stderr, "usage: small-culprit [-commits N>=4] [-trials K>=1] [-seed S] [-out FILE] [-confidence 0.5..0.999] [-time SECONDS] [-keep]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *commits, *trials, *seed, *out, *conf, *window, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "small-culprit:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, commits, trials int, seed uint64, outPath string, conf float64, window string, keep bool) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "small-culprit-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Fprintln(os.Stderr, "work directory:", work)
	} else {
		defer os.RemoveAll(work)
	}
	bin := filepath.Join(work, "perfbisect")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/perfbisect")
	build.Dir, build.Stderr = root, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/perfbisect: %w", err)
	}
	params := fmt.Sprintf("# small-culprit -commits %d -seed %d -confidence %g -time %s", commits, seed, conf, window)
	done := map[int]row{}
	var out *os.File
	if outPath != "" {
		if done, err = readRows(outPath, params); err != nil {
			return err
		}
		if out, err = os.OpenFile(outPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err != nil {
			return err
		}
		defer out.Close()
		if st, err := out.Stat(); err == nil && st.Size() == 0 {
			if _, err := fmt.Fprintln(out, params); err != nil {
				return err
			}
		}
	}
	rng := rand.New(rand.NewPCG(seed, 21))
	var rows []row
	for i := 1; i <= trials; i++ {
		pos := 1 + rng.IntN(commits)
		if r, ok := done[i]; ok {
			rows = append(rows, r)
			continue
		}
		r, err := trial(ctx, root, bin, filepath.Join(work, fmt.Sprint(i)), i, commits, pos, conf, window)
		if err != nil {
			return err
		}
		fmt.Println(r.tsv())
		rows = append(rows, r)
		if out != nil && r.Answer != "error" { // an error is tried again by the next run
			if _, err := fmt.Fprintln(out, r.tsv()); err != nil {
				return err
			}
		}
	}
	summarize(rows, commits)
	return nil
}

// trial generates the fixture of trial i and bisects it.
func trial(ctx context.Context, root, bin, dir string, i, commits, pos int, conf float64, window string) (row, error) {
	repo := filepath.Join(dir, "server")
	mk := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "make-fixture.sh"), "--quiet", "--small-culprit",
		"--commits", fmt.Sprint(commits), "--culprit-pos", fmt.Sprint(pos), "--broken-pos", "0", repo)
	if b, err := mk.CombinedOutput(); err != nil {
		return row{}, fmt.Errorf("make-fixture.sh: %v\n%s", err, b)
	}
	culprit, err := os.ReadFile(filepath.Join(repo, ".git", "perfbisect-culprit"))
	if err != nil {
		return row{}, err
	}
	jsonPath := filepath.Join(dir, "result.json")
	args := []string{"start", "--repo", repo, "--good", "good", "--bad", "bad", "--state-dir", filepath.Join(dir, "state"), "--json", jsonPath, "--quiet",
		"--workload", "oltp_read_only", "--table-size", "100000", "--range-size", "1000", "--rand-type", "uniform",
		"--threads", "2", "--tables", "1", "--time", window, "--warmup", "0.5"}
	if runtime.NumCPU() >= 2 {
		args = append(args, "--server-cpus", "1", "--client-cpus", "0")
	}
	if conf > 0 {
		args = append(args, "--confidence", fmt.Sprint(conf))
	}
	began := time.Now()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stderr = os.Stderr
	_ = cmd.Run() // the exit code is read from the JSON's result
	if ctx.Err() != nil {
		return row{}, ctx.Err() // interrupted: not a trial's result
	}
	r := row{Trial: i, Pos: pos, Wall: time.Since(began), Answer: "error"}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		return r, nil
	}
	var j struct {
		Result         string   `json:"result"`
		FirstBad       *string  `json:"first_bad"`
		Range          []string `json:"range"`
		Why            string   `json:"why"`
		Runs           int      `json:"runs"`
		EstimatedRuns  int      `json:"estimated_runs"`
		SmallestChange float64  `json:"smallest_change"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return row{}, fmt.Errorf("%s: %w", jsonPath, err)
	}
	want := strings.TrimSpace(string(culprit))
	switch {
	case j.Result == "found" && j.FirstBad != nil && *j.FirstBad == want:
		r.Answer = "exact"
	case j.Result == "found":
		r.Answer = "wrong"
	case j.Result == "ambiguous" && contains(j.Range, want):
		r.Answer = fmt.Sprintf("range-%d", len(j.Range))
	case j.Result == "ambiguous":
		r.Answer = "wrong-range"
	case j.Result == "no-regression" || j.Result == "no_regression":
		r.Answer = "missed"
	default:
		r.Answer = j.Result
	}
	r.Runs, r.Estimate, r.Smallest = j.Runs, j.EstimatedRuns, 100*j.SmallestChange
	if m := regexp.MustCompile(`shift ([-+][0-9.]+)% at ([0-9.]+)% noise`).FindStringSubmatch(j.Why); m != nil {
		r.Shift, _ = strconv.ParseFloat(m[1], 64)
		r.Noise, _ = strconv.ParseFloat(m[2], 64)
	}
	return r, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// summarize prints the trials' table as markdown.
func summarize(rows []row, commits int) {
	fmt.Printf("\n%d commits, small culprit (make-fixture.sh --small-culprit), %d trials\n\n", commits, len(rows))
	fmt.Println("| trial | culprit at | answer | runs | estimate | smallest change | shift | noise | wall |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	exact, runs := 0, 0
	for _, r := range rows {
		fmt.Printf("| %d | %d | %s | %d | %d | %.1f%% | %+.1f%% | %.1f%% | %s |\n", r.Trial, r.Pos, r.Answer, r.Runs, r.Estimate, r.Smallest, r.Shift, r.Noise, r.Wall.Round(time.Second))
		if r.Answer == "exact" {
			exact++
		}
		runs += r.Runs
	}
	if len(rows) > 0 {
		fmt.Printf("\nexact %d of %d; %.0f runs per trial\n", exact, len(rows), float64(runs)/float64(len(rows)))
	}
}

// readRows reads the trials of an earlier run's TSV (a missing file: none);
// its first line must be params (the same parameters).
func readRows(path, params string) (map[int]row, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return map[int]row{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows := map[int]row{}
	sc := bufio.NewScanner(f)
	for line := 0; sc.Scan(); line++ {
		if line == 0 {
			if sc.Text() != params {
				return nil, fmt.Errorf("%s was made with other parameters (%q, now %q): name another -out file", path, sc.Text(), params)
			}
			continue
		}
		fs := strings.Split(sc.Text(), "\t")
		if len(fs) != 9 {
			return nil, fmt.Errorf("%s: line %q: want 9 tab-separated fields", path, sc.Text())
		}
		var r row
		r.Trial, _ = strconv.Atoi(fs[0])
		r.Pos, _ = strconv.Atoi(fs[1])
		r.Answer = fs[2]
		r.Runs, _ = strconv.Atoi(fs[3])
		r.Estimate, _ = strconv.Atoi(fs[4])
		r.Smallest, _ = strconv.ParseFloat(fs[5], 64)
		r.Shift, _ = strconv.ParseFloat(fs[6], 64)
		r.Noise, _ = strconv.ParseFloat(fs[7], 64)
		secs, _ := strconv.ParseFloat(fs[8], 64)
		r.Wall = time.Duration(secs * float64(time.Second))
		rows[r.Trial] = r
	}
	return rows, sc.Err()
}

// moduleRoot is the directory of this checkout's go.mod.
func moduleRoot() (string, error) {
	b, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(b))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("run it inside the perfbisect checkout (no go.mod here)")
	}
	return filepath.Dir(mod), nil
}
