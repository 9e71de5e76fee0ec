// Command real-trees builds, starts and measures real server source trees
// with perfbisect's defaults, series by series, and prints one table: what
// docs/builds.md's table of versions is made from. It is not run in CI: all
// series take hours of builds on 2 cores.
//
//	go run ./scripts/real-trees [-series 10.0,10.3] [-out real-trees.tsv] [-work DIR] [-min-free 20GiB] REPO...
//	go run ./scripts/real-trees -out docs/data/real-trees.tsv ~/src/mariadb-releases ~/src/mariadb-10.11
//
// Each REPO is a git repository of one flavor's releases, tagged as released
// (mariadb-10.0.22, mysql-5.7.44, 10.11.18; scripts/real-trees/import-releases.sh
// makes one from release imports). Its release tags are grouped by series
// (X.Y); for every series the -series filter admits (default: all), the
// newest release (NEW) and the one -back releases before it (OLD; in a
// series of one release, the release before it in the repository) are
//
//  1. built cold: perfbisect build NEW, with an empty ccache (a CCACHE_DIR of
//     the series' own) into a fresh state directory: wall time, the install's
//     size, perfbisect's own peak resident size (its VmHWM, not the
//     compiler's);
//  2. built warm: perfbisect build OLD into the same state directory and
//     ccache: the rebuild between releases a bisection pays;
//  3. compared: perfbisect compare OLD NEW in that state directory (4 runs a
//     side (the fewest a one-look test at 95% can decide with), 5 s windows, 2 threads, 1 table of 10,000 rows): the servers
//     start, the workload runs, both medians and the verdict.
//
// Only the flags of a user who types --good and --bad are given: the presets
// must do the rest. A series appends one line to -out when it is done
// (resumable: a series already there is not done again; a failed one is
// written with its error and done again only when its line is deleted), and
// the table is printed from -out. Its state directory and ccache are deleted
// after its line is written (-keep leaves them), so the disk holds one series
// at a time; a series does not start while the disk under -work has less than
// -min-free. It refuses to start while another perfbisect holds the machine's
// machine lock (it would measure beside it).
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	humanize "github.com/dustin/go-humanize"
	version "github.com/hashicorp/go-version"

	"github.com/perfbisect/perfbisect/bisect/measure"
	"github.com/perfbisect/perfbisect/serverctl"
)

// releaseTag is a release's tag: an optional flavor prefix, then X.Y.Z.
var releaseTag = regexp.MustCompile(`^(?:(mariadb|mysql|percona-server)-)?(\d+)\.(\d+)\.(\d+)$`)

// release is one tagged release of a repository.
type release struct {
	tag    string
	v      *version.Version
	series string // X.Y
}

// row is one series' line of the table.
type row struct {
	repo, series, oldTag, newTag string
	cold, warm                   time.Duration
	install                      int64   // bytes of NEW's install
	peakRSS                      int64   // bytes: perfbisect's own, the largest of its three commands
	oldTPS, newTPS               float64 // medians of the compare
	result                       string  // the compare's result, or what failed
}

func main() {
	series := flag.String("series", "", "series to do, comma separated (10.0,10.3); default all")
	out := flag.String("out", "real-trees.tsv", "file the series' lines are appended to (resumable)")
	work := flag.String("work", "", "where the state directories and ccaches go (default: a directory under the user's cache dir)")
	minFree := flag.String("min-free", "20GiB", "free disk under -work a series needs before it starts")
	back := flag.Int("back", 1, "OLD is this many releases before the series' newest")
	keep := flag.Bool("keep", false, "keep each series' state directory and ccache")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: real-trees [-series X.Y,...] [-out FILE] [-work DIR] REPO...")
		os.Exit(2)
	}
	free, err := humanize.ParseBytes(*minFree)
	if err != nil {
		fatal(2, "-min-free %q: %v", *minFree, err)
	}
	if holder, busy := machineBusy(); busy {
		fatal(1, "another perfbisect holds the machine lock %s (%s): run this alone", measure.LockPath, holder)
	}
	if *work == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			fatal(2, "no cache directory: pass -work")
		}
		*work = filepath.Join(base, "perfbisect-real-trees")
	}
	if err := os.MkdirAll(*work, 0o700); err != nil {
		fatal(1, "%v", err)
	}
	bin := filepath.Join(*work, "perfbisect")
	if b, err := exec.Command("go", "build", "-o", bin, "./cmd/perfbisect").CombinedOutput(); err != nil {
		fatal(1, "go build (run this in perfbisect's repository): %v\n%s", err, b)
	}
	done := readDone(*out)
	want := map[string]bool{}
	for _, s := range strings.Split(*series, ",") {
		if s = strings.TrimSpace(s); s != "" {
			want[s] = true
		}
	}
	for _, repo := range flag.Args() {
		rels, err := releases(repo)
		if err != nil {
			fatal(2, "%s: %v", repo, err)
		}
		for _, s := range seriesOf(rels) {
			if len(want) > 0 && !want[s] || done[repo+"\t"+s] {
				continue
			}
			newRel, oldRel, ok := pair(rels, s, *back)
			if !ok {
				fmt.Fprintf(os.Stderr, "real-trees: %s series %s: one release and none before it: nothing to compare it with\n", repo, s)
				continue
			}
			if st, err := diskFree(*work); err == nil && st < free {
				fatal(1, "%s free under %s, below -min-free %s: free space, or pass a smaller -min-free", humanize.IBytes(st), *work, *minFree)
			}
			fmt.Fprintf(os.Stderr, "real-trees: %s series %s: %s (cold), %s (warm), compare\n", repo, s, newRel.tag, oldRel.tag)
			r := doSeries(bin, repo, s, oldRel.tag, newRel.tag, filepath.Join(*work, "series-"+s), *keep)
			if err := appendRow(*out, r); err != nil {
				fatal(1, "%s: %v", *out, err)
			}
		}
	}
	printTable(*out)
}

func fatal(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "real-trees: "+format+"\n", args...)
	os.Exit(code)
}

// machineBusy reports whether another process holds the machine lock,
// and who (its holder line).
func machineBusy() (string, bool) {
	f, err := os.OpenFile(measure.LockPath, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(measure.LockPath)
		return strings.TrimSpace(string(b)), true
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return "", false
}

// releases lists the release tags of repo, oldest first.
func releases(repo string) ([]release, error) {
	b, err := exec.Command("git", "-C", repo, "tag", "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("git tag: %w", err)
	}
	var out []release
	for _, t := range strings.Fields(string(b)) {
		m := releaseTag.FindStringSubmatch(t)
		if m == nil {
			continue
		}
		v, err := version.NewVersion(m[2] + "." + m[3] + "." + m[4])
		if err != nil {
			continue
		}
		out = append(out, release{tag: t, v: v, series: m[2] + "." + m[3]})
	}
	if len(out) == 0 {
		return nil, errors.New("no release tags (mariadb-X.Y.Z, mysql-X.Y.Z or X.Y.Z)")
	}
	slices.SortFunc(out, func(a, b release) int { return a.v.Compare(b.v) })
	return out, nil
}

// seriesOf lists the series of rels, oldest first.
func seriesOf(rels []release) []string {
	var out []string
	for _, r := range rels {
		if !slices.Contains(out, r.series) {
			out = append(out, r.series)
		}
	}
	return out
}

// pair returns the newest release of series s and the one back releases
// before it in the series; a series of one release is paired with the
// release before it in rels (another series: a Debian source package has one
// release per series). ok is false when there is none.
func pair(rels []release, s string, back int) (newRel, oldRel release, ok bool) {
	in := inSeries(rels, s)
	newRel = in[len(in)-1]
	if len(in) > back {
		return newRel, in[len(in)-1-back], true
	}
	i := slices.IndexFunc(rels, func(r release) bool { return r.tag == in[0].tag })
	if i == 0 {
		return newRel, release{}, false
	}
	return newRel, rels[i-1], true
}

func inSeries(rels []release, s string) []release {
	var out []release
	for _, r := range rels {
		if r.series == s {
			out = append(out, r)
		}
	}
	return out
}

// watchHWM returns the largest VmHWM (peak resident set) of process pid
// alone, in bytes, read from /proc every quarter second until done is
// closed. A child's rusage would not do: Linux folds the peak of every
// waited-for descendant (the compiler's) into it.
func watchHWM(pid int, done <-chan struct{}) int64 {
	var peak int64
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := serverctl.ProcessPeakRSS(pid); err == nil {
			peak = max(peak, b)
		}
		select {
		case <-done:
			return peak
		case <-tick.C:
		}
	}
}

// doSeries builds NEW cold and OLD warm and compares them, in state (with
// its own ccache), which is removed afterwards unless keep.
func doSeries(bin, repo, series, oldTag, newTag, state string, keep bool) row {
	r := row{repo: repo, series: series, oldTag: oldTag, newTag: newTag}
	_ = os.RemoveAll(state)
	if err := os.MkdirAll(state, 0o700); err != nil {
		r.result = err.Error()
		return r
	}
	if !keep {
		defer os.RemoveAll(state)
	}
	env := append(os.Environ(), "CCACHE_DIR="+filepath.Join(state, "ccache"))
	sd := filepath.Join(state, "state")
	run := func(args ...string) (string, time.Duration, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		var so, se strings.Builder
		cmd.Stdout, cmd.Stderr = &so, &se
		began := time.Now()
		err := cmd.Start()
		if err == nil {
			done := make(chan struct{})
			peak := make(chan int64)
			go func() { peak <- watchHWM(cmd.Process.Pid, done) }()
			err = cmd.Wait()
			close(done)
			r.peakRSS = max(r.peakRSS, <-peak)
		}
		took := time.Since(began)
		if err != nil {
			return so.String(), took, fmt.Errorf("perfbisect %s: %v: %s", args[0], err, lastLine(se.String()))
		}
		return so.String(), took, nil
	}
	o, took, err := run("build", "--repo", repo, "--state-dir", sd, "--quiet", newTag)
	r.cold = took
	if err != nil {
		r.result = "build " + newTag + " failed: " + err.Error()
		return r
	}
	if f := strings.Fields(o); len(f) >= 2 && f[1] != "failed" {
		r.install = dirSize(f[1])
	}
	if _, took, err = run("build", "--repo", repo, "--state-dir", sd, "--quiet", oldTag); err != nil {
		r.result = "build " + oldTag + " failed: " + err.Error()
		return r
	}
	r.warm = took
	o, _, err = run("compare", oldTag, newTag, "--repo", repo, "--state-dir", sd, "--quiet", "--format", "json",
		"--repeats", "4", "--max-repeats", "4", "--time", "5", "--warmup", "2", "--threads", "2", "--table-size", "10000")
	var doc struct {
		Result string `json:"result"`
		Error  string `json:"error"`
		Rows   []struct {
			Decides bool `json:"decides"`
			Compare struct {
				MedianOld, MedianNew float64
			} `json:"compare"`
		} `json:"rows"`
	}
	if jerr := json.Unmarshal([]byte(o), &doc); jerr != nil {
		r.result = "compare: " + errString(err, jerr)
		return r
	}
	for _, row := range doc.Rows {
		if row.Decides {
			r.oldTPS, r.newTPS = row.Compare.MedianOld, row.Compare.MedianNew
		}
	}
	r.result = doc.Result
	if doc.Error != "" {
		r.result += ": " + doc.Error
	}
	return r
}

func errString(err, fallback error) string {
	if err != nil {
		return err.Error()
	}
	return fallback.Error()
}

// dirSize is the bytes of the regular files under dir.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func diskFree(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimPrefix(lines[len(lines)-1], "perfbisect: ")
}

// The TSV: one line per series.
const header = "repo\tseries\told\tnew\tcold_s\twarm_s\tinstall_bytes\tpeak_rss_bytes\told_tps\tnew_tps\tresult\tdate"

func appendRow(path string, r row) error {
	_, err := os.Stat(path)
	f, ferr := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if ferr != nil {
		return ferr
	}
	defer f.Close()
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintln(f, header)
	}
	_, err = fmt.Fprintf(f, "%s\t%s\t%s\t%s\t%.1f\t%.1f\t%d\t%d\t%.1f\t%.1f\t%s\t%s\n", r.repo, r.series, r.oldTag, r.newTag,
		r.cold.Seconds(), r.warm.Seconds(), r.install, r.peakRSS, r.oldTPS, r.newTPS,
		strings.ReplaceAll(r.result, "\t", " "), time.Now().Format("2006-01-02"))
	return err
}

// readDone returns the repo and series of every line of path.
func readDone(path string) map[string]bool {
	done := map[string]bool{}
	f, err := os.Open(path)
	if err != nil {
		return done
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) > 2 && f[0] != "repo" {
			done[f[0]+"\t"+f[1]] = true
		}
	}
	return done
}

func printTable(path string) {
	f, err := os.Open(path)
	if err != nil {
		fatal(1, "%v", err)
	}
	defer f.Close()
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "series\treleases\tclean build\trebuild\tinstall\tperfbisect peak RSS\ttps old -> new\tresult")
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		c := strings.Split(sc.Text(), "\t")
		if len(c) < 12 || c[0] == "repo" {
			continue
		}
		secs := func(s string) string {
			v, _ := strconv.ParseFloat(s, 64)
			if v == 0 {
				return "-"
			}
			return (time.Duration(v * float64(time.Second))).Round(100 * time.Millisecond).String()
		}
		bytes := func(s string) string {
			v, _ := strconv.ParseUint(s, 10, 64)
			if v == 0 {
				return "-"
			}
			return humanize.IBytes(v)
		}
		fmt.Fprintf(tw, "%s (%s)\t%s, %s\t%s\t%s\t%s\t%s\t%s -> %s\t%s\n", c[1], filepath.Base(c[0]), c[2], c[3], secs(c[4]), secs(c[5]),
			bytes(c[6]), bytes(c[7]), c[8], c[9], c[10])
	}
	tw.Flush()
	fmt.Printf("(%s)\n", path)
}
