# frozen_string_literal: true

require "open3"
require_relative "client"

module Pristine
  # The environment variable naming the fleet cache every integration uses
  # when none is given in code.
  CACHE_ENV = "PRISTINE_CACHE"

  module_function

  # Returns the template answer (status "ready", with its "hash") of the
  # template keyed by +key+, building it with the block (given the daemon's
  # answer: host, port, socket, user, password, database, url and env) when
  # nobody has: across processes exactly one caller builds a key, the others
  # wait. A build that raises is aborted and TemplateBuildError raised.
  #
  # +cache+ (default $PRISTINE_CACHE) names an OCI repository a fleet of
  # machines shares: the template is pulled from it when another machine
  # built it, and pushed to it when this caller builds (docs/fleet.md).
  #
  # +key_files+ is how many file paths +key+ is a ContentKey of: given with
  # a build, the daemon refuses a build that no file keys (Error#code
  # UNKEYED_BUILD), whose template would stay the same after a migration
  # changes; +allow_stale+ accepts that risk.
  def ensure_template(client, name, key, database: nil, wait: 1800, cache: nil, key_files: nil, allow_stale: false,
                      &build)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + wait
    cache = ENV[CACHE_ENV] if cache.nil? && ENV[CACHE_ENV] && !ENV[CACHE_ENV].empty?
    loop do
      a = client.begin_template(name, key, database: database, cache: cache, key_files: build ? key_files : nil,
                                           allow_stale: allow_stale)
      return a if a["status"] == "ready"
      return build_template(client, name, a, build) if a["status"] == "build"

      # Someone else builds it: wait, then begin again (it is ready, or its
      # builder failed and this caller tries).
      while a["status"] == "building"
        left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
        if left <= 0
          raise Error, "template #{name}: another process has been building it for longer than #{wait.round}s: " \
                       "see its output, or `pristine template ls`"
        end
        begin
          a = client.wait_template(key, [left, 30].min)
        rescue NoDaemonError
          raise
        rescue Error => e
          break if e.status == 404 # the builder aborted

          raise
        end
        return a if a["status"] == "ready"
      end
    end
  end

  def build_template(client, name, answer, build)
    if build.nil?
      client.abort_template(answer["hash"])
      raise Error, "template #{name}: it does not exist and nothing was given to build it"
    end
    begin
      build.call(answer)
    rescue Exception => e # rubocop:disable Lint/RescueException: abort on Ctrl-C too
      begin
        client.abort_template(answer["hash"])
      rescue Error
        nil
      end
      raise unless e.is_a?(StandardError)

      raise TemplateBuildError, "template #{name}: build failed, so it was aborted: #{e.message}"
    end
    client.finish_template(answer["hash"])
  end
  private_class_method :build_template

  # Makes sure a pool of template +hash+ is up with at least +size+ slots:
  # brings one of +size+ slots up when none is, and grows a smaller one to
  # +size+ (at once: the new slots start in the background and leases wait
  # for them; a notice goes to stderr). Growth beyond the daemon's
  # --max-memory/--max-disk fails at once with the daemon's message, which
  # names the limit. A pool of the same name built from other files is
  # replaced when nobody holds a lease on it, and refused otherwise. A new
  # pool is back as soon as its first slot answers (the others start in the
  # daemon), and a pool a peer is bringing up right now counts as up: the
  # lease that follows waits in the daemon for its first slot.
  def ensure_pool(client, name, hash, size)
    st = nil
    begin
      st = client.pool(name)
    rescue NoDaemonError
      raise
    rescue Error => e
      return if e.status == 503 # a peer's pool up is making the pool: the lease waits for it
      raise if e.status != 404
    end
    if st
      if st["hash"] == hash
        grow_pool(client, name, hash, st["size"].to_i, size) if st["size"].to_i < size
        return
      end

      if st["leased"].to_i.positive?
        raise Error, "pool #{name}: a pool of an older build of this template is up with #{st['leased']} leases: " \
                     "let its tests end, or run `pristine pool down --template #{name}`"
      end
      client.pool_down(name)
    end
    begin
      client.pool_up(hash, [size, 1].max, min_ready: 1) # the first slot is enough: the lease takes it
    rescue Error => e
      raise Error.new("pool #{name}: #{e.message}", e.status) if e.status != 409 # 409: a peer did it first
    end
  end

  def grow_pool(client, name, hash, have, size)
    st = begin
      client.pool_up(hash, size)
    rescue Error => e
      return if e.status == 409 # a peer grew it first

      raise Error.new("pool #{name}: grow it from #{have} to #{size} slots: #{e.message}", e.status)
    end
    warn "pristine: pool #{name} had #{have} slots, this run needs #{size}: grew it to #{(st || {})['size'] || size} " \
         "(the extra slots go again after the daemon's --shrink-after idle)"
  end
  private_class_method :grow_pool

  # The environment a migration command sees for the template server the
  # daemon's answer +conn+ describes: the daemon's env (DATABASE_URL,
  # MYSQL_HOST, MYSQL_PORT, MYSQL_UNIX_PORT, MYSQL_USER, MYSQL_PWD,
  # MYSQL_DATABASE), MYSQL_TCP_PORT for the mariadb client, and a
  # DATABASE_URL Rails understands (mysql2://).
  def command_env(conn)
    env = (conn["env"] || []).each_with_object({}) do |e, h|
      k, v = e.split("=", 2)
      h[k] = v.to_s
    end
    env["MYSQL_TCP_PORT"] ||= conn["port"].to_s
    env["DATABASE_URL"] = Lease.from_json(conn.merge("id" => "")).database_url
    env
  end

  # Runs a shell command (migrations, a schema load) against the template
  # server +conn+ describes (see command_env); raises with the command's
  # status and the end of its output when it fails.
  def run_command(command, conn, chdir: nil, env: {})
    opts = chdir ? { chdir: chdir } : {}
    out, st = Open3.capture2e(command_env(conn).merge(env), command, **opts)
    return if st.success?

    raise "`#{command}` exited with status #{st.exitstatus || st.termsig}: #{out.strip[-2000..] || out.strip}"
  end
end
