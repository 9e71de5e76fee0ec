package reap

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestFindAndKillLeftovers starts real processes as an earlier, killed session
// would have left them: a build tool marked with the state directory, a server
// whose child inherits the mark, and three that must be left alone: an unmarked
// process working inside the state directory (a user's shell), one marked for
// another state directory and one marked for a state directory nested in it.
func TestFindAndKillLeftovers(t *testing.T) {
	state := t.TempDir()
	other := t.TempDir()
	start := func(dir string, env []string, args ...string) *exec.Cmd {
		c := exec.Command(args[0], args[1:]...)
		c.Dir = dir
		c.Env = env
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		go c.Wait()
		return c
	}
	build := start(other, Mark(nil, state), "sleep", "300")
	server := start(other, Mark(nil, state), "sh", "-c", "sleep 300 & wait")
	nested := start(other, Mark(nil, filepath.Join(state, "inner")), "sleep", "303") // another session's state dir
	defer nested.Process.Kill()
	user := start(state, nil, "sleep", "301")
	defer user.Process.Kill()
	foreign := start(other, Mark(nil, other), "sleep", "302")
	defer foreign.Process.Kill()
	time.Sleep(200 * time.Millisecond)

	found := map[int]bool{}
	for _, p := range Find(state) {
		found[p.Pid] = true
	}
	if !found[build.Process.Pid] || !found[server.Process.Pid] || len(found) != 3 {
		t.Fatalf("leftovers found: %v, want the build, the server and the server's child", found)
	}
	if found[user.Process.Pid] || found[foreign.Process.Pid] || found[nested.Process.Pid] {
		t.Fatal("a process that is not a leftover was found")
	}
	Kill(Find(state))
	if alive(build.Process.Pid) || alive(server.Process.Pid) || len(Find(state)) != 0 {
		t.Error("leftovers still alive after Kill")
	}
	if !alive(user.Process.Pid) || !alive(foreign.Process.Pid) || !alive(nested.Process.Pid) {
		t.Error("a process that is not a leftover was killed")
	}
}

// A mark made through a symlink names the same directory.
func TestMarkResolvesSymlinks(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(t.TempDir(), "lnk")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if Canonical(link) != Canonical(dir) {
		t.Errorf("%s and %s differ", Canonical(link), Canonical(dir))
	}
}

// KillGroup ends a whole process group, the leader's children too (what
// the leader started and left when it died), and returns once none of them
// is alive: a zombie waiting for a slow reaper does not count.
func TestKillGroup(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & sleep 60 & echo $!; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var child int
	if _, err := fmt.Fscan(out, &child); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	if !groupAlive(pgid) {
		t.Fatalf("group %d not alive before the kill", pgid)
	}
	KillGroup(pgid, time.Minute)
	_ = cmd.Wait()
	if groupAlive(pgid) || alive(child) {
		t.Errorf("group %d alive after KillGroup (child %d alive: %v)", pgid, child, alive(child))
	}
}
