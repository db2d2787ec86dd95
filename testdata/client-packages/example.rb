# frozen_string_literal: true

# The gem's example, run from the installed gem by
# scripts/test-client-packages.sh: a template built from a tiny SQL string,
# a pool of one, one lease, a query on it, its release.
require "mysql2"
require "pristine"

SQL = ["CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20))", "INSERT INTO t VALUES (1, 'pristine')"].freeze

def open_db(c)
  Mysql2::Client.new(host: c["host"], port: c["port"], username: c["user"], password: c["password"], database: c["database"])
end

client = Pristine::Client.from_env
tpl = Pristine.ensure_template(client, "pkg-ruby", "client-packages-ruby-1") do |conn|
  db = open_db(conn)
  SQL.each { |stmt| db.query(stmt) }
  db.close
end
Pristine.ensure_pool(client, "pkg-ruby", tpl["hash"], 1)
lease = client.lease(template: "pkg-ruby")
db = open_db({ "host" => lease.host, "port" => lease.port, "user" => lease.user, "password" => lease.password, "database" => lease.database })
name = db.query("SELECT name FROM t WHERE id = 1").first["name"]
db.close
client.release(lease.id)
client.pool_down("pkg-ruby")
raise "read #{name.inspect}, want pristine" unless name == "pristine"

from = $LOADED_FEATURES.grep(%r{/pristine/client\.rb\z}).first
puts "ruby: leased #{lease.database} on port #{lease.port}, read '#{name}', released (client from #{from})"
