# frozen_string_literal: true

require_relative "test_helper"
require "mysql2"

# A pool node's slots with TLS (`pristine serve --slot-tls`, what a
# non-loopback --slot-address turns on): the lease carries the CA, and
# active_record_config connects with TLS verified against it and the host
# name (mysql2's sslca and sslverify).
class TlsTest < Minitest::Test
  def self.daemon
    @daemon ||= TestDaemon.new({}, ["--slot-tls"]).tap(&:start)
  end

  def test_lease_connects_with_verified_tls
    c = self.class.daemon.client
    t = Pristine.ensure_template(c, "rbtls", "key-tls-#{Process.pid}") do |conn|
      db = Mysql2::Client.new(host: conn["host"], port: conn["port"], username: conn["user"], password: conn["password"], database: conn["database"])
      db.query("CREATE TABLE canary (id INT PRIMARY KEY, v VARCHAR(20))")
      db.query("INSERT INTO canary VALUES (1, 'pristine')")
      db.close
    end
    Pristine.ensure_pool(c, "rbtls", t["hash"], 1)
    l = c.lease(template: "rbtls", ttl: 60)
    begin
      assert_match(/BEGIN CERTIFICATE/, l.ca)
      cfg = l.active_record_config
      assert_equal true, cfg[:sslverify]
      db = Mysql2::Client.new(**cfg)
      assert_equal "pristine", db.query("SELECT v FROM canary").first["v"]
      refute_empty db.query("SHOW SESSION STATUS LIKE 'Ssl_cipher'").first["Value"].to_s, "the connection is not TLS"
      db.close
      plain = cfg.reject { |k, _| k.to_s.start_with?("ssl") }
      e = assert_raises(Mysql2::Error) { Mysql2::Client.new(**plain, ssl_mode: :disabled) }
      assert_match(/Access denied/, e.message)
      # Trusting the system's CAs instead of the lease's: refused.
      e = assert_raises(Mysql2::Error) { Mysql2::Client.new(**cfg, sslca: "/etc/ssl/certs/ca-certificates.crt") }
      assert_match(/certificate|SSL|TLS|verify/i, e.message)
      assert_includes l.mysql_command, "--ssl-verify-server-cert"
    ensure
      c.release(l.id)
    end
  end

  Minitest.after_run { @daemon&.stop }
end
