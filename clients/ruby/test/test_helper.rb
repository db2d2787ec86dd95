# frozen_string_literal: true

# A real `pristine serve` on a fresh root under /dev/shm for the whole run
# (bin/pristine of this checkout, or $PRISTINE_BIN), shut down and removed
# at exit. No mock: every test talks to the daemon and its mariadbd servers.
$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "minitest/autorun"
require "pristine"
require "tmpdir"
require "fileutils"

REPO = File.expand_path("../../..", __dir__)

# The daemon the tests share.
class TestDaemon
  attr_reader :base, :root, :addr, :token, :client

  # The daemon most tests share, started on first use.
  def self.instance
    @instance ||= new.tap(&:start)
  end

  # +env+ is added to the daemon's environment, +args+ to its flags.
  def initialize(env = {}, args = [])
    @env = env
    @args = args
  end

  def start
    bin = ENV["PRISTINE_BIN"] || File.join(REPO, "bin", "pristine")
    raise "no pristine binary at #{bin}: run `bash scripts/build.sh` or set PRISTINE_BIN" unless File.executable?(bin)
    raise "mariadbd is not installed: run scripts/install-deps.sh" unless File.executable?("/usr/sbin/mariadbd")

    @base = Dir.mktmpdir("pristine-ruby-test-", "/dev/shm")
    # A root pristine runs its servers as the account pristine, which must
    # pass through this directory to the root inside.
    File.chmod(0o711, @base)
    @root = File.join(@base, "root")
    r, w = IO.pipe
    @pid = Process.spawn(@env, bin, "serve", "--root", @root, "--listen", "127.0.0.1:0", *@args, out: File::NULL, err: w)
    w.close
    @log = +""
    while (line = r.gets)
      @log << line
      if (m = line.match(%r{\Apristine: serving http://([^/]+)/}))
        @addr = m[1]
        break
      end
    end
    raise "#{bin} serve did not start:\n#{@log}" unless @addr

    @drain = Thread.new { r.each_line { |l| @log << l } }
    @token = File.read(File.join(@root, "token")).strip
    @client = Pristine::Client.new(socket: File.join(@root, "pristine.sock"))
    at_exit { stop }
  end

  def log
    @log.dup
  end

  def stop
    return if @stopped

    @stopped = true
    begin
      @client.shutdown
    rescue StandardError
      nil
    end
    600.times do
      break if Process.waitpid(@pid, Process::WNOHANG)

      sleep 0.1
    rescue Errno::ECHILD
      break
    end
    begin
      Process.kill(:KILL, @pid)
      Process.waitpid(@pid)
    rescue SystemCallError
      nil
    end
    # Kill servers under our root only, then remove it.
    Dir.glob("/proc/[0-9]*/cmdline").each do |f|
      cmd = File.binread(f) rescue next
      Process.kill(:KILL, File.basename(File.dirname(f)).to_i) if cmd.include?("mariadbd") && cmd.include?(@base)
    rescue SystemCallError
      nil
    end
    FileUtils.rm_rf(@base)
  end
end
