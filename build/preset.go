package build

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	version "github.com/hashicorp/go-version"
)

// Tree describes the server source at one commit, read from the tree itself
// (no checkout): which family it is and the version its VERSION file (or
// MYSQL_VERSION, MySQL 8.0.28+) states.
type Tree struct {
	Flavor  string           // "MariaDB", "MySQL", "Percona"; "" when the tree is not a server tree
	Version *version.Version // nil when unknown
	// NoOpenSSL3: the tree's cmake/ssl.cmake takes a system OpenSSL only
	// below 3.0 (MariaDB 10.3.39 does, though the release notes date
	// OpenSSL 3 support to 10.3.32), so WITH_SSL=system fails on a machine
	// with OpenSSL 3.
	NoOpenSSL3 bool
	// Boost is the directory in the tree that holds the Boost release its
	// cmake/boost.cmake names ("boost/boost_1_59_0", the layout of MySQL's
	// mysql-boost source tarballs), "" when the tree carries none: MySQL's
	// CMake does not look there by itself.
	Boost string
}

func (t Tree) String() string {
	switch {
	case t.Flavor == "":
		return "not a MariaDB/MySQL tree"
	case t.Version == nil:
		return t.Flavor + " (version unknown)"
	}
	return t.Flavor + " " + t.Version.String()
}

// InspectTree reads the flavor and version of the source tree at commit:
// MariaDB when the tree has storage/maria (Aria, MariaDB only) or its major
// version is 10 or more, Percona when it
// has build-ps, MySQL otherwise; the version from VERSION or MYSQL_VERSION
// (MYSQL_VERSION_MAJOR/MINOR/PATCH lines). A tree with neither file is not a
// server tree (Tree.Flavor ""). Errors: the commit or its tree cannot be read.
func InspectTree(repo *git.Repository, commit string) (Tree, error) {
	c, err := repo.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return Tree{}, fmt.Errorf("inspect %s: %w", commit, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return Tree{}, fmt.Errorf("inspect %s: tree: %w", commit, err)
	}
	var vars map[string]string
	for _, name := range []string{"MYSQL_VERSION", "VERSION"} {
		if f, err := tree.File(name); err == nil {
			vars = readVersionFile(f)
			if vars["MYSQL_VERSION_MAJOR"] != "" {
				break
			}
		}
	}
	if vars["MYSQL_VERSION_MAJOR"] == "" {
		return Tree{}, nil
	}
	var t Tree
	has := func(dir string) bool { _, err := tree.Tree(dir); return err == nil }
	major, _ := strconv.Atoi(vars["MYSQL_VERSION_MAJOR"])
	switch {
	case has("storage/maria") || major >= 10: // MySQL went from 8.x to 9.x
		t.Flavor = "MariaDB"
	case has("build-ps"):
		t.Flavor = "Percona"
	default:
		t.Flavor = "MySQL"
	}
	v := vars["MYSQL_VERSION_MAJOR"] + "." + vars["MYSQL_VERSION_MINOR"] + "." + vars["MYSQL_VERSION_PATCH"]
	if parsed, err := version.NewVersion(v); err == nil {
		t.Version = parsed
	}
	if f, err := tree.File("cmake/ssl.cmake"); err == nil && f.Size < 1<<20 {
		if text, err := f.Contents(); err == nil {
			t.NoOpenSSL3 = refusesOpenSSL3Text(text)
		}
	}
	if f, err := tree.File("cmake/boost.cmake"); err == nil && f.Size < 1<<20 {
		if text, err := f.Contents(); err == nil {
			if m := boostPackage.FindStringSubmatch(text); m != nil {
				for _, dir := range []string{"boost/" + m[1], m[1]} {
					if _, err := tree.File(dir + "/boost/version.hpp"); err == nil {
						t.Boost = dir
						break
					}
				}
			}
		}
	}
	return t, nil
}

// belowOpenSSL3 matches the check of a cmake/ssl.cmake that takes a system
// OpenSSL only below 3.0, as MariaDB 10.3.39's does ("IF(OPENSSL_FOUND AND
// OPENSSL_VERSION AND OPENSSL_VERSION VERSION_LESS "3.0.0")"): the version
// test on the line that tests OPENSSL_FOUND, not negated. MariaDB 10.5 and
// 10.11 test the version too, to silence OpenSSL 3's deprecations ("OR
// NOT(OPENSSL_VERSION VERSION_LESS "3.0.0")"), and take OpenSSL 3.
var belowOpenSSL3 = regexp.MustCompile(`(?m)^.*\bOPENSSL_FOUND\b.*?(NOT\s*\(\s*)?\bOPENSSL_VERSION\s+VERSION_LESS\s+"?3\.0`)

// refusesOpenSSL3Text reports whether the text of a cmake/ssl.cmake takes a
// system OpenSSL only below 3.0 (belowOpenSSL3).
func refusesOpenSSL3Text(text string) bool {
	for _, m := range belowOpenSSL3.FindAllStringSubmatch(text, -1) {
		if m[1] == "" {
			return true
		}
	}
	return false
}

// readVersionFile parses NAME=VALUE lines (MariaDB's VERSION, MySQL's
// MYSQL_VERSION) as a shell would read them (quotes, "export ", comments, a
// byte-order mark), ignoring anything else.
func readVersionFile(f *object.File) map[string]string {
	vars := map[string]string{}
	r, err := f.Reader()
	if err != nil {
		return vars
	}
	defer r.Close()
	sc := bufio.NewScanner(io.LimitReader(r, 64<<10))
	for sc.Scan() {
		line := strings.TrimSpace(strings.TrimPrefix(sc.Text(), "\ufeff"))
		line = strings.TrimSpace(strings.TrimPrefix(line, "export "))
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		if i := strings.Index(value, "#"); i >= 0 {
			value = value[:i] // a shell comment
		}
		vars[strings.TrimSpace(name)] = strings.Trim(strings.TrimSpace(value), `"'`)
	}
	return vars
}

// Preset is a built-in CMake recipe for a server family: a lean, server-only
// RelWithDebInfo build (no unit tests, no embedded server, none of the big
// optional engines), with fixes that old trees need on a current compiler.
type Preset struct {
	Name   string // "mariadb", "mysql"
	Flavor string // the family it is for ("Percona" trees use "mysql" plus extras)
	Rules  []PresetRule
}

// PresetRule adds CMake arguments for the versions its constraint matches
// (hashicorp/go-version syntax, e.g. "< 10.2.41"; "" matches every version,
// also an unknown one) and, when If is set, the trees it accepts. Note says
// why, for the user.
type PresetRule struct {
	Versions string
	If       func(Tree) bool
	Args     []string
	Note     string
}

// takesOpenSSL3 and refusesOpenSSL3 tell the trees whose cmake/ssl.cmake
// takes the machine's OpenSSL 3 from those that refuse it (Tree.NoOpenSSL3).
func takesOpenSSL3(t Tree) bool   { return !t.NoOpenSSL3 }
func refusesOpenSSL3(t Tree) bool { return t.NoOpenSSL3 }

// Presets are the built-in recipes, by name. Which versions were actually
// built with them on this project's machine is in docs/builds.md; the rules for
// older versions follow the servers' release notes (OpenSSL 3 support:
// MariaDB 10.2.41/10.3.32/10.4.22/10.5.13/10.6.5, MySQL 8.0.30; C++17 as
// gcc 11+'s default breaks MariaDB before 10.2 and MySQL before 5.7), and
// the trees themselves where a real build proved the notes wrong (10.3.39's
// cmake/ssl.cmake refuses OpenSSL 3: Tree.NoOpenSSL3).
var Presets = map[string]Preset{
	"mariadb": {Name: "mariadb", Flavor: "MariaDB", Rules: []PresetRule{
		{Args: []string{"-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DWITH_UNIT_TESTS=OFF", "-DWITH_EMBEDDED_SERVER=OFF",
			"-DWITH_WSREP=OFF", "-DWITH_MARIABACKUP=OFF", "-DWITH_SYSTEMD=no", "-DCONC_WITH_UNIT_TESTS=OFF",
			"-DPLUGIN_MROONGA=NO", "-DPLUGIN_ROCKSDB=NO", "-DPLUGIN_SPIDER=NO", "-DPLUGIN_CONNECT=NO",
			"-DPLUGIN_S3=NO", "-DPLUGIN_COLUMNSTORE=NO", "-DPLUGIN_OQGRAPH=NO", "-DPLUGIN_SPHINX=NO",
			"-DPLUGIN_TOKUDB=NO", "-DPLUGIN_CASSANDRA=NO", "-DPLUGIN_HASHICORP_KEY_MANAGEMENT=NO",
			"-DPLUGIN_AUTH_PAM=NO", "-DPLUGIN_AUTH_PAM_V1=NO", "-DPLUGIN_AUTH_GSSAPI=NO"},
			Note: "lean server-only RelWithDebInfo build"},
		// 10.5 moved to PCRE2, which its "bundled" setting downloads at build
		// time; 10.0-10.4 carry PCRE 1 in pcre/ and want libpcre3-dev for
		// "system" (a 10.0.22 configure failed so on Debian 12).
		{Versions: ">= 10.5", Args: []string{"-DWITH_PCRE=system", "-DWITH_ZLIB=system"}, Note: "system PCRE2 and zlib"},
		{Versions: "< 10.5", Args: []string{"-DWITH_PCRE=bundled", "-DWITH_ZLIB=system"}, Note: "the tree's own PCRE 1 (pcre/), system zlib"},
		{Versions: ">= 10.6.5", If: takesOpenSSL3, Args: []string{"-DWITH_SSL=system"}, Note: "system OpenSSL"},
		{Versions: ">= 10.5.13, < 10.6", If: takesOpenSSL3, Args: []string{"-DWITH_SSL=system"}, Note: "system OpenSSL"},
		{Versions: ">= 10.4.22, < 10.5", If: takesOpenSSL3, Args: []string{"-DWITH_SSL=system"}, Note: "system OpenSSL"},
		{Versions: ">= 10.3.32, < 10.4", If: takesOpenSSL3, Args: []string{"-DWITH_SSL=system"}, Note: "system OpenSSL"},
		{Versions: ">= 10.2.41, < 10.3", If: takesOpenSSL3, Args: []string{"-DWITH_SSL=system"}, Note: "system OpenSSL"},
		{Versions: "< 10.2.41", Args: []string{"-DWITH_SSL=bundled"}, Note: "bundled SSL: this version predates OpenSSL 3 support"},
		{Versions: ">= 10.2.41", If: refusesOpenSSL3, Args: []string{"-DWITH_SSL=bundled"}, Note: "bundled SSL: the tree's cmake/ssl.cmake takes no OpenSSL 3"},
		// 10.0 and 10.1 keep TokuDB, Mroonga and the others in the build for
		// PLUGIN_X=NO (TokuDB then needs C++11 against the gnu++98 below);
		// they honour WITHOUT_X. Their libmysql's linker-script check fails
		// under CMake 3.25 ("Either switch to GNU ld ..."), as 10.0.26 did.
		{Versions: "< 10.2", Args: []string{"-DWITHOUT_TOKUDB=1", "-DWITHOUT_MROONGA=1", "-DWITHOUT_CONNECT=1",
			"-DWITHOUT_SPIDER=1", "-DWITHOUT_OQGRAPH=1", "-DWITHOUT_CASSANDRA=1", "-DWITHOUT_SPHINX=1",
			"-DDISABLE_LIBMYSQLCLIENT_SYMBOL_VERSIONING=TRUE"},
			Note: "WITHOUT_X for the engines (10.0/10.1 ignore PLUGIN_X=NO for them), no libmysqlclient symbol versioning"},
		{Versions: "< 10.2", Args: []string{"-DCMAKE_CXX_STANDARD=98", "-DCMAKE_CXX_FLAGS=-std=gnu++98 -Wno-error", "-DCMAKE_C_FLAGS=-fcommon -Wno-error"},
			Note: "C++98 and -fcommon: the tree predates gcc 10/11 defaults (its release tarball carries the generated parser, so bison 3.8 is not needed)"},
	}},
	"mysql": {Name: "mysql", Flavor: "MySQL", Rules: []PresetRule{
		{Args: []string{"-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DWITH_UNIT_TESTS=OFF", "-DWITH_EMBEDDED_SERVER=OFF",
			"-DWITH_ROUTER=OFF", "-DWITH_NDB=OFF", "-DWITH_NDBCLUSTER=OFF", "-DWITH_NDBCLUSTER_STORAGE_ENGINE=OFF",
			"-DWITH_RAPID=OFF", "-DWITH_MYSQLX=OFF", "-DWITH_TOKUDB=OFF", "-DWITH_ROCKSDB=OFF",
			"-DWITH_ZLIB=bundled", "-DWITH_SYSTEMD=OFF"},
			Note: "lean server-only RelWithDebInfo build"},
		{Versions: ">= 8.0.30", If: takesOpenSSL3, Args: []string{"-DWITH_SSL=system"}, Note: "system OpenSSL"},
		{Versions: "< 8.0.30", Args: []string{"-DWITH_SSL=bundled"}, Note: "bundled SSL: this version predates OpenSSL 3 support"},
		{Versions: ">= 8.0.30", If: refusesOpenSSL3, Args: []string{"-DWITH_SSL=bundled"}, Note: "bundled SSL: the tree's cmake/ssl.cmake takes no OpenSSL 3"},
		{Versions: "< 5.7", Args: []string{"-DCMAKE_CXX_FLAGS=-std=gnu++98 -Wno-error", "-DCMAKE_C_FLAGS=-fcommon -Wno-error"},
			Note: "C++98 and -fcommon: the tree predates gcc 10/11 defaults"},
	}},
}

// PresetFor returns the preset a recipe's name selects for tree: "auto" (or
// "") picks by flavor (MariaDB: mariadb; MySQL, Percona: mysql; not a server
// tree: none), "none" none, or a preset by name. Errors: an unknown name.
func PresetFor(name string, t Tree) (*Preset, error) {
	switch name {
	case "", "auto":
		switch t.Flavor {
		case "MariaDB":
			p := Presets["mariadb"]
			return &p, nil
		case "MySQL", "Percona":
			p := Presets["mysql"]
			return &p, nil
		}
		return nil, nil
	case "none":
		return nil, nil
	}
	p, ok := Presets[name]
	if !ok {
		return nil, fmt.Errorf("unknown build preset %q: want auto, none or one of %s", name, strings.Join(PresetNames(), ", "))
	}
	return &p, nil
}

// PresetNames lists the built-in presets, sorted.
func PresetNames() []string {
	var names []string
	for n := range Presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Args returns the CMake arguments of p for the tree t (an unknown version:
// every rule with a version constraint is left out) and the notes of the
// rules that apply, in rule order.
func (p *Preset) Args(t Tree) (args, notes []string) {
	v := t.Version
	for _, r := range p.Rules {
		if r.If != nil && !r.If(t) {
			continue
		}
		if r.Versions != "" {
			c, err := version.NewConstraint(r.Versions)
			if err != nil {
				panic(fmt.Sprintf("preset %s: bad constraint %q: %v", p.Name, r.Versions, err))
			}
			if v == nil || !c.Check(v) {
				continue
			}
		}
		args = append(args, r.Args...)
		notes = append(notes, r.Note)
	}
	return args, notes
}
