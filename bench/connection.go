package bench

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// Connection is where a workload connects, by sysbench's --mysql-* options:
// --mysql-socket, --mysql-host, --mysql-port, --mysql-user, --mysql-password and
// --mysql-db. The zero value means sysbench's defaults (DefaultConnection).
type Connection struct {
	Socket   string // unix socket; wins over Host and Port
	Host     string // "localhost" without Socket means the default socket, as in libmysqlclient
	Port     int    // TCP port, 3306 by default
	User     string
	Password string
	DB       string // database of the tables (created by Prepare when missing)
}

// DefaultConnection is sysbench 1.0's: localhost, port 3306, user sbtest,
// no password, database sbtest.
func DefaultConnection() Connection {
	return Connection{Host: "localhost", Port: 3306, User: "sbtest", DB: "sbtest"}
}

// defaultSockets are where MariaDB and MySQL packages put the server's socket,
// tried in order for Host "localhost" without Socket (libmysqlclient connects
// to its compiled-in socket there, not to TCP).
var defaultSockets = []string{"/run/mysqld/mysqld.sock", "/var/run/mysqld/mysqld.sock", "/tmp/mysql.sock", "/var/lib/mysql/mysql.sock"}

// Endpoint returns the network ("unix" or "tcp") and address c connects to:
// Socket if set; for Host "localhost" (or empty) the first default socket that
// exists, or the first of them when none does (as libmysqlclient, which then
// fails naming it: no silent fall-back to TCP, which could reach another
// server); otherwise Host and Port over TCP.
func (c Connection) Endpoint() (network, addr string) {
	if c.Socket != "" {
		return "unix", c.Socket
	}
	port := c.Port
	if port == 0 {
		port = 3306
	}
	if c.Host == "" || c.Host == "localhost" {
		for _, s := range defaultSockets {
			if fi, err := os.Stat(s); err == nil && fi.Mode()&os.ModeSocket != 0 {
				return "unix", s
			}
		}
		return "unix", defaultSockets[0]
	}
	host := strings.TrimSuffix(strings.TrimPrefix(c.Host, "["), "]") // [::1] as sysbench accepts it
	return "tcp", net.JoinHostPort(host, strconv.Itoa(port))
}

// DSN returns go-sql-driver's data source name for c (see Endpoint).
func (c Connection) DSN() string {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.DBName = c.User, c.Password, c.DB
	cfg.Net, cfg.Addr = c.Endpoint()
	return cfg.FormatDSN()
}

// Args are the --mysql-* options (sysbench's) that connect to c: the socket or the
// host and port, the user, the password and the database.
func (c Connection) Args() []string {
	var args []string
	network, addr := c.Endpoint()
	if network == "unix" {
		args = append(args, "--mysql-socket="+addr)
	} else {
		host, port, _ := net.SplitHostPort(addr)
		args = append(args, "--mysql-host="+host, "--mysql-port="+port)
	}
	return append(args, "--mysql-user="+c.User, "--mysql-password="+c.Password, "--mysql-db="+c.DB)
}

// String describes c for messages, without the password.
func (c Connection) String() string {
	network, addr := c.Endpoint()
	if network == "unix" {
		addr = "socket " + addr
	}
	return fmt.Sprintf("%s@%s, database %s", c.User, addr, c.DB)
}

// Set applies one --mysql-* option by its name in OptionName's form; ok is false for any
// other name.
func (c *Connection) Set(key, v string) (ok bool, err error) {
	switch key {
	case "mysql-socket":
		c.Socket = v
	case "mysql-host":
		if strings.Contains(v, ",") {
			return true, fmt.Errorf("%w: --mysql-host=%s: one host only", ErrInvalidOption, v)
		}
		c.Host = v
	case "mysql-port":
		if err := parseInt(key, v, &c.Port); err != nil {
			return true, err
		}
		if c.Port <= 0 || c.Port > 65535 {
			return true, fmt.Errorf("%w: --mysql-port=%s: want 1..65535", ErrInvalidOption, v)
		}
	case "mysql-user":
		c.User = v
	case "mysql-password":
		c.Password = v
	case "mysql-db":
		c.DB = v
	default:
		return false, nil
	}
	return true, nil
}
