ENV["RAILS_ENV"] ||= "test"
require_relative "../config/environment"
require "pristine/rails" # before rails/test_help
require "rails/test_help"

class ActiveSupport::TestCase
  parallelize(workers: Integer(ENV.fetch("WORKERS", "2")))
  # The one-line change: a pristine database per worker, from a template
  # built once by `bin/rails db:schema:load`, keyed by db/schema.rb. Two
  # per worker: ImportTest takes a second one for each of its tests.
  pristine_databases pool_size: 2 * Integer(ENV.fetch("WORKERS", "2"))

  fixtures :all

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
