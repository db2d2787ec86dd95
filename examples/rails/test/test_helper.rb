ENV["RAILS_ENV"] ||= "test"
require_relative "../config/environment"
require "pristine/rails" # before rails/test_help
# scripts/bench-rails.sh: when each worker starts setting its database up.
if ENV["SETUP_LOG"]
  require "active_support/testing/parallelization"
  ActiveSupport::Testing::Parallelization.after_fork_hook { $setup_started = Process.clock_gettime(Process::CLOCK_MONOTONIC) }
end
require "rails/test_help"

class ActiveSupport::TestCase
  parallelize(workers: Integer(ENV.fetch("WORKERS", "2")))
  # The one-line change: a pristine database per worker, from a template
  # built once by `bin/rails db:schema:load`, keyed by db/schema.rb. Two
  # per worker: ImportTest takes a second one for each of its tests.
  pristine_databases pool_size: Integer(ENV.fetch("POOL_SIZE", 2 * Integer(ENV.fetch("WORKERS", "2"))))

  fixtures :all

  # Which database each worker leased (its setup ran after pristine's hook),
  # for run-parallel.sh's checks: every worker counts, even one that the
  # others left no test to run.
  if ENV["EXAMPLE_LOG"]
    parallelize_setup do |i|
      row = ActiveRecord::Base.connection.select_rows("SELECT DATABASE(), @@port").first
      lease = Pristine::Rails.process_lease&.id if Pristine::Rails.enabled?
      File.open(ENV["EXAMPLE_LOG"], "a") { |f| f.puts ["setup", Process.pid, lease || "-", row[1], row[0], "worker-#{i}"].join(" ") }
    end
  end

  # scripts/bench-rails.sh: how long each worker's database took (Rails' own
  # db_test-N and schema load, or pristine's lease).
  if ENV["SETUP_LOG"]
    parallelize_setup do |i|
      ms = (Process.clock_gettime(Process::CLOCK_MONOTONIC) - $setup_started) * 1000
      File.open(ENV["SETUP_LOG"], "a") { |f| f.puts format("%d %.1f", i, ms) }
    end
  end

  # Which database this test ran on, for run-parallel.sh's checks.
  def record(kind)
    log = ENV["EXAMPLE_LOG"]
    return unless log

    c = ActiveRecord::Base.connection
    row = c.select_rows("SELECT DATABASE(), @@port").first
    lease = Pristine::Rails.process_lease&.id if Pristine::Rails.enabled?
    lease = @pristine_test_lease.id if @pristine_test_lease
    File.open(log, "a") { |f| f.puts [kind, Process.pid, lease || "-", row[1], row[0], "#{self.class.name}##{name}"].join(" ") }
  end
end
