# frozen_string_literal: true

require "json"
require "socket"
require "uri"
require "erb"
require_relative "errors"
require_relative "lease"

module Pristine
  # HTTP/JSON client of a pristine daemon, over its unix socket or over
  # loopback TCP with a bearer token. Each request is one HTTP/1.1 exchange
  # on a fresh connection (Ruby's stdlib only: no gem needed).
  class Client
    # The longest wait_seconds the daemon accepts in one request (1 hour).
    MAX_WAIT = 3600.0

    attr_reader :socket, :url

    # Client.new(socket: "/var/lib/pristine/pristine.sock") talks over the
    # unix socket; Client.new(url: "http://127.0.0.1:7878", token: T) over
    # TCP. +timeout+ (seconds) bounds requests that do not wait on purpose.
    def initialize(socket: nil, url: nil, token: nil, timeout: 120)
      socket = File.join(Client.default_root, "pristine.sock") if socket.nil? && url.nil?
      @socket = socket
      @url = url && (url.include?("://") ? url : "http://#{url}").chomp("/")
      @token = token
      @timeout = timeout
    end

    # $PRISTINE_ROOT, else /var/lib/pristine for root, else ~/.local/share/pristine.
    def self.default_root
      r = ENV["PRISTINE_ROOT"]
      return r if r && !r.empty?
      return "/var/lib/pristine" if Process.euid.zero?

      File.join(Dir.home, ".local", "share", "pristine")
    end

    # The daemon of PRISTINE_URL (+ PRISTINE_TOKEN, or the root's token
    # file), else the unix socket of PRISTINE_ROOT or the default root.
    def self.from_env
      url = ENV["PRISTINE_URL"]
      return new(socket: File.join(default_root, "pristine.sock")) if url.nil? || url.empty?

      token = ENV["PRISTINE_TOKEN"]
      if token.nil? || token.empty?
        path = File.join(default_root, "token")
        begin
          token = File.read(path).strip
        rescue SystemCallError => e
          raise Error, "PRISTINE_URL is set but PRISTINE_TOKEN is not, and #{path}: #{e.message}: " \
                       "set PRISTINE_TOKEN to the token in #{path} on the daemon's host"
        end
      end
      new(url: url, token: token)
    end

    # Where the daemon is expected: the socket path or the URL.
    def where
      @socket || @url
    end

    # Sends one request; returns [status, decoded JSON] for a status in +ok+,
    # raises Pristine::Error otherwise.
    def request(method, path, body = nil, ok: [200], timeout: nil)
      status, headers, raw = exchange(method, path, body, timeout || @timeout)
      data = raw.strip.empty? ? nil : (JSON.parse(raw) rescue nil)
      return [status, data] if ok.include?(status)

      msg = data.is_a?(Hash) ? data["error"].to_s : ""
      msg = "#{method} #{path}: HTTP #{status}: #{raw[0, 500]}" if msg.empty?
      raise Error.new(msg, status, headers["retry-after"].to_f, data.is_a?(Hash) ? data["code"].to_s : "")
    end

    # GET /v1/health.
    def health
      request("GET", "/v1/health")[1]
    end

    # POST /v1/templates: the answer's "status" is ready, build (the caller
    # builds: the connection fields are set) or building (someone else is).
    # +cache+ names an OCI repository a fleet shares (docs/fleet.md).
    #
    # +key_files+, when given, says the build runs code and how many file
    # paths the key covers: with none the daemon refuses (Error#code
    # UNKEYED_BUILD) unless +allow_stale+ accepts a template that goes
    # stale when the files the build reads change.
    def begin_template(name, key, database: nil, cache: nil, key_files: nil, allow_stale: false)
      body = { "name" => name, "key" => key }
      unless key_files.nil?
        body["runs_code"] = true
        body["key_files"] = key_files if key_files.positive?
      end
      body["allow_stale"] = true if allow_stale
      body["database"] = database if database && !database.empty?
      body["cache"] = cache if cache && !cache.empty?
      request("POST", "/v1/templates", body, ok: [200, 201, 423])[1]
    end

    # PUT /v1/templates/HASH: the build succeeded.
    def finish_template(hash)
      request("PUT", "/v1/templates/#{q(hash)}")[1]
    end

    # DELETE /v1/templates/HASH: the build failed; someone may begin again.
    def abort_template(hash)
      request("DELETE", "/v1/templates/#{q(hash)}")
      nil
    end

    # GET /v1/templates/REF?wait=: status ready, building or failed.
    def wait_template(ref, wait)
      request("GET", format("/v1/templates/%s?wait=%.3f", q(ref), wait), ok: [200, 410, 423], timeout: wait + 30)[1]
    end

    # GET /v1/pools/NAME.
    def pool(template)
      request("GET", "/v1/pools/#{q(template)}")[1]
    end

    # POST /v1/pools: brings a pool up and returns its status once
    # +min_ready+ slots answered (0: the daemon's default, its first round of
    # starts; +size+: every slot; the daemon streams progress as JSON lines);
    # the others go on starting in the daemon, each serving waiting leases as
    # it answers. For a smaller pool of the same template that is up, grows
    # it to +size+: the status comes back at once, the new slots start in the
    # background.
    def pool_up(template, size, min_ready: 0)
      req = { "template" => template, "size" => size }
      req["min_ready"] = min_ready if min_ready.positive?
      status, _, raw = exchange("POST", "/v1/pools", req, nil)
      if status != 200
        msg = (JSON.parse(raw)["error"] rescue nil) || raw
        raise Error.new(msg.to_s, status)
      end
      raw.each_line do |line|
        ev = JSON.parse(line) rescue next
        next unless ev.is_a?(Hash)
        raise Error.new(ev["error"], (ev["code"] || 500).to_i) if ev["error"] && !ev["error"].empty?
        return ev["status"] if ev["status"]
      end
      raise Error, "pool up: the daemon closed the connection before the pool was ready: see serve.log under the root"
    end

    # DELETE /v1/pools/NAME.
    def pool_down(template)
      request("DELETE", "/v1/pools/#{q(template)}")[1]
    end

    # Leases a database, waiting up to +wait+ seconds for a free one (and for
    # a pool a peer is still bringing up). +pid+ (default: this process) is
    # the holder process: the daemon reclaims the lease when it exits.
    # +min_size+ is how many slots the run uses at once: a smaller pool
    # grows to it first, at once, or the call fails at once (507) naming
    # the daemon's --max-memory/--max-disk when they do not fit.
    def lease(template: nil, holder: "", wait: 60, pid: Process.pid, ttl: 0, min_size: 0)
      body = { "holder" => holder, "pid" => pid }
      body["min_size"] = min_size if min_size.positive?
      body["template"] = template if template && !template.empty?
      body["ttl_seconds"] = ttl if ttl.positive?
      deadline = now + wait
      loop do
        # The daemon waits at most an hour per request; longer waits loop.
        body["wait_seconds"] = (deadline - now).clamp(0.001, MAX_WAIT)
        pause = 0.1
        begin
          return Lease.from_json(request("POST", "/v1/leases", body, timeout: body["wait_seconds"] + 30)[1])
        rescue NoDaemonError
          raise
        rescue Error => e
          if e.status == 429 # too many waiters: back off as the daemon asks
            pause = [e.retry_after, 0.1].max
          elsif e.status != 503
            raise
          end
          raise if now + pause >= deadline
        end
        sleep pause
      end
    end

    # Returns a lease: dirty (reset in the background) or, with
    # +unchanged+, handed out again at once when the daemon finds nothing moved.
    def release(id, unchanged: false)
      request("DELETE", "/v1/leases/#{q(id)}#{unchanged ? '?mode=unchanged' : ''}")[1]
    end

    # Keeps a lease's database for debugging (until `pristine release ID`).
    def keep(id)
      Lease.from_json(request("POST", "/v1/leases/#{q(id)}/keep")[1])
    end

    # Extends a lease's TTL.
    def extend_lease(id, ttl)
      Lease.from_json(request("POST", "/v1/leases/#{q(id)}/extend", { "ttl_seconds" => ttl })[1])
    end

    # Makes template +name+ from lease +id+'s current state: everything
    # committed before the fork starts (docs/architecture.md, "Fork"). The
    # lease and its connections go on. With +key+ (e.g. ContentKey.of the
    # fixture files), the fork is filed under its parent's key and this
    # one, and a later fork with the same key answers at once with the
    # template made before ("built" false). Returns {"template" => {...},
    # "built" => bool, "seconds" => float}; lease the fork by name once a
    # pool of it is up (Pristine.ensure_pool with its "hash").
    def fork(id, name, key: nil)
      body = { "name" => name }
      body["key"] = key if key && !key.empty?
      request("POST", "/v1/leases/#{q(id)}/fork", body)[1]
    end

    # GET /v1/leases/ID (with credentials).
    def get_lease(id)
      Lease.from_json(request("GET", "/v1/leases/#{q(id)}")[1])
    end

    # GET /v1/leases: every lease, without credentials.
    def leases
      request("GET", "/v1/leases")[1]
    end

    # POST /v1/shutdown: stops the daemon and its servers.
    def shutdown
      request("POST", "/v1/shutdown", timeout: 120)
      nil
    end

    private

    def q(s)
      ERB::Util.url_encode(s.to_s)
    end

    def now
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end

    def no_daemon(cause)
      NoDaemonError.new("no pristine daemon is running on #{where}: start one with `pristine pool up` or `pristine serve` (#{cause})")
    end

    def connect
      if @socket
        UNIXSocket.new(@socket)
      else
        u = URI(@url)
        Socket.tcp(u.host, u.port || 80, connect_timeout: 10)
      end
    rescue Errno::ENOENT, Errno::ECONNREFUSED => e
      raise no_daemon(e.message)
    rescue SystemCallError, SocketError => e
      raise Error, "connect to the pristine daemon at #{where}: #{e.message}"
    end

    # One HTTP/1.1 request with Connection: close; returns [status, headers, body].
    def exchange(method, path, body, timeout)
      data = body.nil? ? "" : JSON.generate(body)
      head = +"#{method} #{path} HTTP/1.1\r\nHost: pristine\r\nConnection: close\r\n" \
              "Content-Type: application/json\r\nContent-Length: #{data.bytesize}\r\n"
      head << "Authorization: Bearer #{@token}\r\n" if @token
      sock = connect
      begin
        sock.write(head, "\r\n", data)
        raw = read_all(sock, timeout && now + timeout, "#{method} #{path}")
      rescue Errno::EPIPE, Errno::ECONNRESET => e
        raise Error, "#{method} #{path}: the daemon closed the connection (#{e.message}): see serve.log under the root"
      ensure
        sock.close
      end
      parse_response(raw, "#{method} #{path}")
    end

    def read_all(sock, deadline, what)
      buf = +"".b
      loop do
        chunk = sock.read_nonblock(1 << 16, exception: false)
        case chunk
        when nil then return buf
        when :wait_readable
          left = deadline && deadline - now
          if left && left <= 0
            raise Error, "#{what}: the daemon did not answer in time: see serve.log under the root"
          end
          IO.select([sock], nil, nil, left)
        else buf << chunk
        end
      end
    end

    def parse_response(raw, what)
      head, body = raw.split("\r\n\r\n", 2)
      lines = head.to_s.split("\r\n")
      status = lines.shift.to_s[%r{\AHTTP/1\.[01] (\d{3})}, 1]
      raise Error, "#{what}: not an HTTP answer from #{where}: #{raw[0, 200].inspect}" unless status

      headers = lines.each_with_object({}) do |l, h|
        k, v = l.split(":", 2)
        h[k.strip.downcase] = v.to_s.strip
      end
      body = dechunk(body.to_s) if headers["transfer-encoding"].to_s.downcase.include?("chunked")
      [status.to_i, headers, body.to_s.force_encoding(Encoding::UTF_8)]
    end

    def dechunk(s)
      out = +"".b
      i = 0
      while (j = s.index("\r\n", i))
        n = s[i...j].split(";").first.to_i(16)
        break if n.zero?

        out << s[j + 2, n]
        i = j + 2 + n + 2
      end
      out
    end
  end
end
