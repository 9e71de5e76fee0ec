# linkbench.sql: a LinkBench-shaped mix on LinkBench's MySQL schema (a social
# graph: nodes, links between them, a count of each node's links), with the
# operations in the proportions of LinkBench's default workload (per 1000:
# get_link_list 507, get_node 129, add_link 90, update_link 80, update_node 74,
# count_links 49, delete_link 30, add_node 26, delete_node 10, multiget_link 5).
# A sketch of LinkBench, not LinkBench: its id distributions (power laws fitted
# to Facebook's graph) are zipfian here, and its payloads are random strings.
#
#   perfbisect start ... --workload docs/workloads/linkbench.sql --table-size 100000

set nodes = {table-size}
set links = 5

table nodetable rows {nodes}
  CREATE TABLE nodetable (
    id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
    type INT UNSIGNED NOT NULL,
    version BIGINT UNSIGNED NOT NULL,
    time INT UNSIGNED NOT NULL,
    data VARCHAR(255) NOT NULL);
  column id = seq
  column type = uniform 1 4
  column version = uniform 1 10
  column time = uniform 1500000000 1600000000
  column data = string "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"

table linktable rows {nodes}*{links}
  CREATE TABLE linktable (
    id1 BIGINT UNSIGNED NOT NULL,
    id2 BIGINT UNSIGNED NOT NULL,
    link_type BIGINT UNSIGNED NOT NULL,
    visibility TINYINT NOT NULL,
    data VARCHAR(255) NOT NULL,
    time BIGINT UNSIGNED NOT NULL,
    version INT UNSIGNED NOT NULL,
    PRIMARY KEY (link_type, id1, id2));
  column id1 = cycle 1 {nodes}
  column id2 = seq
  column link_type = cycle 1 1
  column visibility = cycle 1 1
  column data = string "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
  column time = uniform 1500000000 1600000000
  column version = uniform 1 10

table counttable rows {nodes}
  CREATE TABLE counttable (
    id BIGINT UNSIGNED NOT NULL,
    link_type BIGINT UNSIGNED NOT NULL,
    count INT UNSIGNED NOT NULL,
    time BIGINT UNSIGNED NOT NULL,
    version BIGINT UNSIGNED NOT NULL,
    PRIMARY KEY (id, link_type));
  column id = seq
  column link_type = cycle 1 1
  column count = cycle {links} {links}
  column time = uniform 1500000000 1600000000
  column version = cycle 1 1

after load
  CREATE INDEX id1_type ON linktable (id1, link_type, visibility, time, id2, version, data);

generator node = zipfian 1 {nodes}
generator node1 = zipfian 1 {nodes} per transaction
generator other = uniform 1 {nodes}*{links}*2 per transaction
generator now = uniform 1600000000 1700000000
generator payload = string "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
generator type = uniform 1 4

transaction get_link_list weight 507 autocommit
  SELECT id1, id2, link_type, visibility, data, time, version FROM linktable
   WHERE id1 = ?node AND link_type = 1 AND visibility = 1 ORDER BY time DESC LIMIT 10000;

transaction get_node weight 129 autocommit
  SELECT id, type, version, time, data FROM nodetable WHERE id = ?node;

transaction add_link weight 90
  INSERT INTO linktable (id1, id2, link_type, visibility, data, time, version)
  VALUES (?node1, ?other, 1, 1, ?payload, ?now, 0)
  ON DUPLICATE KEY UPDATE visibility = 1, data = VALUES(data), time = VALUES(time), version = version + 1;
  INSERT INTO counttable (id, link_type, count, time, version) VALUES (?node1, 1, 1, ?now, 0)
  ON DUPLICATE KEY UPDATE count = count + 1, time = VALUES(time), version = version + 1;

transaction update_link weight 80 autocommit
  UPDATE linktable SET data = ?payload, time = ?now, version = version + 1
   WHERE link_type = 1 AND id1 = ?node LIMIT 1;

transaction update_node weight 74 autocommit
  UPDATE nodetable SET version = version + 1, time = ?now, data = ?payload WHERE id = ?node;

transaction count_links weight 49 autocommit
  SELECT count FROM counttable WHERE id = ?node AND link_type = 1;

transaction delete_link weight 30
  DELETE FROM linktable WHERE link_type = 1 AND id1 = ?node1 AND id2 = ?other;
  UPDATE counttable SET count = IF(count > 0, count - 1, 0), time = ?now, version = version + 1
   WHERE id = ?node1 AND link_type = 1;

transaction add_node weight 26 autocommit
  INSERT INTO nodetable (type, version, time, data) VALUES (?type, 0, ?now, ?payload);

transaction delete_node weight 10 autocommit
  DELETE FROM nodetable WHERE id = ?node;

transaction multiget_link weight 5 autocommit
  SELECT id1, id2, link_type, visibility, data, time, version FROM linktable
   WHERE link_type = 1 AND id1 = ?node1 AND id2 IN (?other, ?other+1, ?other+2);
