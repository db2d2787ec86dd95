# frozen_string_literal: true

require "erb"

module Pristine
  # A leased database: its connection, and the lease's id to release it.
  #
  # +ca+ is the CA certificate (PEM) of a slot reachable over the network
  # (`pristine serve --slot-address`), "" for a loopback slot.
  Lease = Struct.new(:id, :template, :slot, :host, :port, :socket, :user, :password, :database,
                     :url, :env, :kept, :pid, :ca, keyword_init: true) do
    # A Lease from the daemon's JSON answer.
    def self.from_json(d)
      env = (d["env"] || []).each_with_object({}) do |e, h|
        k, v = e.split("=", 2)
        h[k] = v.to_s
      end
      new(id: d["id"].to_s, template: d["template"].to_s, slot: d["slot"].to_i,
          host: (d["host"] || "127.0.0.1").to_s, port: d["port"].to_i, socket: d["socket"].to_s,
          user: d["user"].to_s, password: d["password"].to_s, database: d["database"].to_s,
          url: d["url"].to_s, env: env, kept: d["kept"] ? true : false, pid: d["pid"].to_i,
          ca: d["ca"].to_s)
    end

    # The connection for ActiveRecord (or Mysql2::Client.new), over TCP;
    # for a lease with a CA, TLS with the server's certificate and name
    # verified against it.
    def active_record_config
      c = { host: host, port: port, username: user, password: password, database: database }
      # sslverify: the server's certificate and name (ssl_mode is ignored
      # by the MariaDB client library Debian's mysql2 is built with).
      c.merge!(sslca: ca_file, sslverify: true) unless ca.to_s.empty?
      c
    end

    # A file holding the lease's CA certificate (written once per CA, 0600,
    # in the temporary directory), or "" for a loopback lease.
    def ca_file
      return "" if ca.to_s.empty?

      require "digest"
      require "tmpdir"
      path = File.join(Dir.tmpdir, "pristine-ca-#{Process.uid}-#{Digest::SHA256.hexdigest(ca)[0, 16]}.pem")
      unless File.exist?(path)
        tmp = "#{path}.#{Process.pid}"
        File.open(tmp, File::WRONLY | File::CREAT | File::TRUNC, 0o600) { |f| f.write(ca) }
        File.rename(tmp, path)
      end
      path
    end

    # A DATABASE_URL Rails understands (mysql2://user:password@host:port/database).
    def database_url(adapter = "mysql2")
      e = ->(s) { ERB::Util.url_encode(s) }
      "#{adapter}://#{e.(user)}:#{e.(password)}@#{host}:#{port}/#{e.(database)}"
    end

    # A mariadb client command line that opens the database.
    def mysql_command
      tls = ca.to_s.empty? ? "" : " --ssl-ca=#{ca_file} --ssl-verify-server-cert"
      "mariadb -h#{host} -P#{port} -u#{user} -p#{password}#{tls} #{database}"
    end

    # Never print the password.
    def inspect
      "#<Pristine::Lease #{id} #{template} #{user}@#{host}:#{port}/#{database}#{kept ? ' kept' : ''}>"
    end
    alias_method :to_s, :inspect
  end
end
