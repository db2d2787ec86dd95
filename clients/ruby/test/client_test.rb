# frozen_string_literal: true

require_relative "test_helper"
require "mysql2"

# The client against a real daemon and real mariadbd servers.
class ClientTest < Minitest::Test
  i_suck_and_my_tests_are_order_dependent! # one daemon, templates named per test

  def daemon
    TestDaemon.instance
  end

  def client
    daemon.client
  end

  def connect(l)
    c = l.is_a?(Pristine::Lease) ? l.active_record_config : { host: l["host"], port: l["port"], username: l["user"], password: l["password"], database: l["database"] }
    Mysql2::Client.new(**c)
  end

  def canary_build(conn)
    db = connect(conn)
    db.query("CREATE TABLE canary (id INT PRIMARY KEY, v VARCHAR(20))")
    db.query("INSERT INTO canary VALUES (1, 'pristine')")
  ensure
    db&.close
  end

  def canary(lease)
    db = connect(lease)
    db.query("SELECT v FROM canary WHERE id = 1").first&.fetch("v")
  ensure
    db&.close
  end

  def key(name)
    Pristine::ContentKey.of([], ["ruby client test #{name} #{Process.pid}"])
  end

  def test_no_daemon_names_the_socket_and_the_fix
    sock = File.join(Dir.tmpdir, "pristine-ruby-nope-#{$$}", "pristine.sock")
    e = assert_raises(Pristine::NoDaemonError) { Pristine::Client.new(socket: sock).health }
    assert_match(/no pristine daemon is running on #{Regexp.escape(sock)}: start one with `pristine pool up` or `pristine serve`/, e.message)
    assert_equal 0, e.status
  end

  def test_tcp_needs_the_token
    e = assert_raises(Pristine::Error) { Pristine::Client.new(url: daemon.addr, token: "wrong").health }
    assert_equal 401, e.status
    assert Pristine::Client.new(url: "http://#{daemon.addr}", token: daemon.token).health
  end

  def test_from_env_reads_the_root
    old = ENV.to_h.slice("PRISTINE_ROOT", "PRISTINE_URL", "PRISTINE_TOKEN")
    ENV["PRISTINE_ROOT"] = daemon.root
    ENV.delete("PRISTINE_URL")
    assert_equal File.join(daemon.root, "pristine.sock"), Pristine::Client.from_env.where
    ENV["PRISTINE_URL"] = daemon.addr # the token from the root's token file
    assert Pristine::Client.from_env.health
  ensure
    %w[PRISTINE_ROOT PRISTINE_URL PRISTINE_TOKEN].each { |k| old[k] ? ENV[k] = old[k] : ENV.delete(k) }
  end

  # Four threads, two over the socket and two over TCP, ask for the same
  # template: one builds it, every one gets the same hash.
  def test_builds_once_across_callers
    k = key("once")
    builds = Queue.new
    tcp = Pristine::Client.new(url: daemon.addr, token: daemon.token)
    hashes = [client, client, tcp, tcp].map do |c|
      Thread.new do
        Pristine.ensure_template(c, "once", k) do |conn|
          builds << 1
          sleep 0.5
          canary_build(conn)
        end["hash"]
      end
    end.map(&:value)
    assert_equal 1, builds.size
    assert_equal 1, hashes.uniq.size
    refute_empty hashes.first
  end

  # A failed build is aborted with the migration's error; the next caller builds.
  def test_failed_build_is_aborted_and_retried
    k = key("fails")
    e = assert_raises(Pristine::TemplateBuildError) do
      Pristine.ensure_template(client, "fails", k) { |conn| Pristine.run_command("exit 3", conn) }
    end
    assert_match(/template fails: build failed, so it was aborted: `exit 3` exited with status 3/, e.message)
    a = Pristine.ensure_template(client, "fails", k) do |conn|
      Pristine.run_command(%(mariadb -u"$MYSQL_USER" "$MYSQL_DATABASE" -e "CREATE TABLE canary (id INT PRIMARY KEY, v VARCHAR(20)); INSERT INTO canary VALUES (1, 'cli')"), conn)
    end
    assert_equal "ready", a["status"]
  end

  # A new pool: ensure_pool is back once its first slot answers (min_ready
  # 1), the others still starting, and the lease that follows takes a slot.
  def test_ensure_pool_returns_at_the_first_slot
    t = Pristine.ensure_template(client, "first", key("first")) { |conn| canary_build(conn) }
    Pristine.ensure_pool(client, "first", t["hash"], 24)
    st = client.pool("first")
    assert_equal 24, st["size"]
    assert_operator st["states"].fetch("ready", 0), :<, 24, "ensure_pool waited for every slot: #{st['states']}"
    l = client.lease(template: "first", holder: "first", wait: 60)
    assert_equal "pristine", canary(l)
    client.release(l.id)
    client.pool_down("first")
  end

  # A fork is a template of a lease's current state: its leases see the
  # row written before it, the same key returns the fork made before, and
  # the lease's connection goes on.
  def test_fork_makes_a_template_of_a_lease_and_the_lease_goes_on
    t = Pristine.ensure_template(client, "rbforkbase", key("forkbase")) { |conn| canary_build(conn) }
    Pristine.ensure_pool(client, "rbforkbase", t["hash"], 1)
    l = client.lease(template: "rbforkbase", holder: "ruby fork")
    begin
      db = connect(l)
      db.query("UPDATE canary SET v = 'loaded' WHERE id = 1")
      a = client.fork(l.id, "rbforked", key: "fixtures-v1")
      assert a["built"], a.inspect
      assert_equal ["rbforked", t["hash"], "rbforkbase"], a["template"].values_at("name", "parent", "parent_name")
      # The holder's connection survives the fork.
      assert_equal "loaded", db.query("SELECT v FROM canary WHERE id = 1").first["v"]
      # The same key again: the fork made before, at once.
      again = client.fork(l.id, "rbforked", key: "fixtures-v1")
      refute again["built"], again.inspect
      assert_equal a["template"]["hash"], again["template"]["hash"]
    ensure
      db&.close
      client.release(l.id)
    end
    Pristine.ensure_pool(client, "rbforked", a["template"]["hash"], 1)
    f = client.lease(template: "rbforked", holder: "ruby fork lease")
    assert_equal "loaded", canary(f)
    client.release(f.id)
    client.pool_down("rbforked")
    client.pool_down("rbforkbase")
  end

  # Leases are separate databases; a released one comes back pristine; a
  # full pool answers 503 with the daemon's message; keep marks it kept.
  def test_pool_lease_release_keep
    t = Pristine.ensure_template(client, "leases", key("leases")) { |conn| canary_build(conn) }
    Pristine.ensure_pool(client, "leases", t["hash"], 2)
    Pristine.ensure_pool(client, "leases", t["hash"], 2) # already up: nothing to do
    a = client.lease(template: "leases", holder: "ruby test a")
    b = client.lease(template: "leases", holder: "ruby test b")
    refute_equal [a.port, a.database], [b.port, b.database]
    refute_includes a.inspect, a.password unless a.password.empty?
    assert_equal "pristine", canary(a)
    connect(a).query("UPDATE canary SET v = 'dirty' WHERE id = 1")
    assert_equal "dirty", canary(a)
    assert_equal "pristine", canary(b), "a write in one lease showed in another"

    e = assert_raises(Pristine::Error) { client.lease(template: "leases", wait: 1) }
    assert_equal 503, e.status
    refute_empty e.message

    client.release(a.id)
    client.release(b.id, unchanged: true)
    c = client.lease(template: "leases", wait: 60)
    assert_equal "pristine", canary(c), "a released database came back dirty"
    assert_equal Process.pid, client.get_lease(c.id).pid
    k = client.keep(c.id)
    assert k.kept
    assert client.get_lease(c.id).kept
    assert_equal 0, k.pid, "a kept lease must outlive its holder process"
    client.release(c.id)
    e = assert_raises(Pristine::Error) { client.get_lease(c.id) }
    assert_includes [404, 410], e.status
  end

  # A run that needs more slots than the pool has grows it: a lease with
  # min_size, and ensure_pool of a larger size (which says so on stderr).
  def test_a_smaller_pool_grows
    t = Pristine.ensure_template(client, "grows", key("grows")) { |conn| canary_build(conn) }
    Pristine.ensure_pool(client, "grows", t["hash"], 1)
    assert_equal 1, client.pool("grows")["size"].to_i
    a = client.lease(template: "grows", holder: "ruby test a")
    # Without min_size a second lease waits for the one slot.
    e = assert_raises(Pristine::Error) { client.lease(template: "grows", wait: 1) }
    assert_equal 503, e.status
    b = client.lease(template: "grows", holder: "ruby test b", min_size: 3, wait: 60)
    assert_equal 3, client.pool("grows")["size"].to_i
    c = client.lease(template: "grows", holder: "ruby test c", wait: 60)
    assert_equal 3, [a, b, c].map { |l| [l.port, l.database] }.uniq.size
    assert_equal "pristine", canary(b)
    _, err = capture_io { Pristine.ensure_pool(client, "grows", t["hash"], 4) }
    assert_match(/pristine: pool grows had 3 slots, this run needs 4: grew it to 4/, err)
    d = client.lease(template: "grows", holder: "ruby test d", wait: 60)
    assert_equal "pristine", canary(d)
    [a, b, c, d].each { |l| client.release(l.id) }
  end

  def test_out_of_range_values_give_the_daemons_400
    e = assert_raises(Pristine::Error) { client.lease(template: "leases", ttl: 1e300, wait: 1) }
    assert_equal 400, e.status
    assert_match(/ttl_seconds/, e.message)
  end

  # No silent stale templates: a build no file keys is refused before it
  # runs; keyed by its migrations, a changed migration gets a new template.
  def test_a_build_no_file_keys_is_refused_and_a_changed_migration_gets_a_new_template
    dir = Dir.mktmpdir("pristine-ruby-stale-")
    mig = File.join(dir, "001.sql")
    File.write(mig, "one")
    runs = 0
    build = proc { |conn| runs += 1; canary_build(conn) }
    e = assert_raises(Pristine::Error) do
      Pristine.ensure_template(client, "rbstale", Pristine::ContentKey.of([], ["bin/rails db:migrate"]), key_files: 0, &build)
    end
    assert_equal [400, Pristine::UNKEYED_BUILD, 0], [e.status, e.code, runs]
    first = Pristine.ensure_template(client, "rbstale", Pristine::ContentKey.of([dir]), key_files: 1, &build)
    File.write(mig, "two")
    second = Pristine.ensure_template(client, "rbstale", Pristine::ContentKey.of([dir]), key_files: 1, &build)
    assert_equal 2, runs
    refute_equal first["hash"], second["hash"]
  ensure
    FileUtils.rm_rf(dir) if dir
  end
end
