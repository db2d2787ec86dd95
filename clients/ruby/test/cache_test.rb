# frozen_string_literal: true

require_relative "test_helper"
require "mysql2"
require "net/http"
require "socket"

# ensure_template with a fleet cache, through two real daemons (two
# "machines") and a real OCI registry (Debian's docker-registry): the
# template is built once, on the first; the second pulls it.
class CacheTest < Minitest::Test
  def start_registry(dir)
    exe = ENV["PATH"].split(":").map { |d| File.join(d, "docker-registry") }.find { |f| File.executable?(f) }
    skip "docker-registry is not installed: run scripts/install-deps.sh" unless exe
    addr = TCPServer.open("127.0.0.1", 0) { |s| "127.0.0.1:#{s.addr[1]}" }
    cfg = File.join(dir, "registry.yml")
    File.write(cfg, "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n" \
                    "storage:\n  filesystem:\n    rootdirectory: #{dir}/storage\nhttp:\n  addr: #{addr}\n")
    @registry = Process.spawn(exe, "serve", cfg, out: File::NULL, err: File::NULL)
    100.times do
      Net::HTTP.get_response(URI("http://#{addr}/v2/"))
      return addr
    rescue SystemCallError
      sleep 0.1
    end
    flunk "docker-registry did not start"
  end

  def teardown
    @daemons&.each(&:stop)
    return unless @registry

    Process.kill(:KILL, @registry)
    Process.waitpid(@registry)
  end

  def test_fleet_cache_builds_once_across_daemons
    Dir.mktmpdir("pristine-ruby-test-registry-") do |dir|
      registry = start_registry(dir)
      allow = { "PRISTINE_ALLOW_CACHE" => "http://#{registry}/fleet" }
      first, second, third = @daemons = [TestDaemon.new(allow), TestDaemon.new(allow), TestDaemon.new].each(&:start)
      builds = 0
      a = Pristine.ensure_template(first.client, "rbcache", "rb-key-1", database: "shop", cache: "#{registry}/fleet/templates") do |conn|
        builds += 1
        db = Mysql2::Client.new(host: conn["host"], port: conn["port"], username: conn["user"], password: conn["password"], database: conn["database"])
        db.query("CREATE TABLE canary (v VARCHAR(20))")
        db.query("INSERT INTO canary VALUES ('pristine')")
        db.close
      end
      assert_equal "ready", a["status"]
      assert_equal 1, builds

      # The second machine pulls it; $PRISTINE_CACHE is the cache when the code names none.
      ENV["PRISTINE_CACHE"] = "#{registry}/fleet/templates"
      b = Pristine.ensure_template(second.client, "rbcache", "rb-key-1", database: "shop") do
        flunk "the second daemon built a template its fleet's cache holds"
      end
      assert_equal a["hash"], b["hash"]
      second.client.pool_up("rbcache", 1)
      l = second.client.lease(template: "rbcache")
      db = Mysql2::Client.new(**l.active_record_config)
      assert_equal "pristine", db.query("SELECT v FROM canary").first["v"]
      db.close
      second.client.release(l.id)

      # A daemon that does not allow the repository says how to allow it.
      e = assert_raises(Pristine::Error) do
        Pristine.ensure_template(third.client, "rbcache", "rb-key-1", database: "shop") { flunk "built" }
      end
      assert_equal 403, e.status
      assert_includes e.message, "--allow-cache #{registry}/fleet/templates"
    ensure
      ENV.delete("PRISTINE_CACHE")
    end
  end
end
