# frozen_string_literal: true

require "erb"

module Pristine
  # A leased database: its connection, and the lease's id to release it.
  Lease = Struct.new(:id, :template, :slot, :host, :port, :socket, :user, :password, :database,
                     :url, :env, :kept, :pid, keyword_init: true) do
    # A Lease from the daemon's JSON answer.
    def self.from_json(d)
      env = (d["env"] || []).each_with_object({}) do |e, h|
        k, v = e.split("=", 2)
        h[k] = v.to_s
      end
      new(id: d["id"].to_s, template: d["template"].to_s, slot: d["slot"].to_i,
          host: (d["host"] || "127.0.0.1").to_s, port: d["port"].to_i, socket: d["socket"].to_s,
          user: d["user"].to_s, password: d["password"].to_s, database: d["database"].to_s,
          url: d["url"].to_s, env: env, kept: d["kept"] ? true : false, pid: d["pid"].to_i)
    end

    # The connection for ActiveRecord (or Mysql2::Client.new), over TCP.
    def active_record_config
      { host: host, port: port, username: user, password: password, database: database }
    end

    # A DATABASE_URL Rails understands (mysql2://user:password@host:port/database).
    def database_url(adapter = "mysql2")
      e = ->(s) { ERB::Util.url_encode(s) }
      "#{adapter}://#{e.(user)}:#{e.(password)}@#{host}:#{port}/#{e.(database)}"
    end

    # A mariadb client command line that opens the database.
    def mysql_command
      "mariadb -h#{host} -P#{port} -u#{user} -p#{password} #{database}"
    end

    # Never print the password.
    def inspect
      "#<Pristine::Lease #{id} #{template} #{user}@#{host}:#{port}/#{database}#{kept ? ' kept' : ''}>"
    end
    alias_method :to_s, :inspect
  end
end
