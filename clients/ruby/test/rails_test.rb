# frozen_string_literal: true

require_relative "test_helper"
require "mysql2"
require "open3"

# The Rails integration, through examples/rails (Debian's Rails 6.1) run
# with `bin/rails test` against the test daemon: parallel workers each on
# their own lease, and the fault table of docs/ruby.md.
class RailsTest < Minitest::Test
  i_suck_and_my_tests_are_order_dependent!
  APP = File.join(REPO, "examples", "rails")

  def daemon
    TestDaemon.instance
  end

  def env(extra = {})
    { "PRISTINE_ROOT" => daemon.root, "RUBYLIB" => File.join(REPO, "clients", "ruby", "lib"),
      "PRISTINE_URL" => nil, "PRISTINE_KEEP_FAILED" => nil, "PRISTINE_DISABLE" => nil,
      "BUNDLE_GEMFILE" => nil }.merge(extra)
  end

  # bin/rails test in dir; returns [output, status].
  def rails_test(dir, extra_env = {})
    Open3.capture2e(env(extra_env), Gem.ruby, "bin/rails", "test", chdir: dir)
  end

  # A copy of the example to break.
  # How many leases of the example's pool the daemon reclaimed because
  # their holder exited without returning them.
  def holder_gone
    daemon.client.pool("blog").dig("stats", "holder_gone").to_i
  rescue Pristine::Error
    0
  end

  def copy_app
    dir = Dir.mktmpdir("pristine-ruby-test-app-", "/dev/shm")
    FileUtils.cp_r("#{APP}/.", dir)
    FileUtils.rm_rf(File.join(dir, "log"))
    FileUtils.rm_rf(File.join(dir, "tmp"))
    dir
  end

  def test_each_worker_and_each_per_test_class_test_has_its_own_database
    log = File.join(daemon.base, "example.log")
    gone = holder_gone
    out, st = rails_test(APP, "EXAMPLE_LOG" => log, "WORKERS" => "3")
    assert st.success?, out
    assert_match(/0 failures, 0 errors/, out)
    rows = File.readlines(log).map(&:split)
    setup = rows.select { |r| r[0] == "setup" }
    worker = rows.select { |r| r[0] == "worker" }
    per_test = rows.select { |r| r[0] == "test" }
    # Three workers, each on its own lease, server and database (which
    # worker runs how many tests is Rails' scheduling: one may run none).
    assert_equal 3, setup.map { |r| r[1] }.uniq.size, "not 3 workers:\n#{out}"
    assert_equal 3, setup.map { |r| r[2] }.uniq.size
    assert_equal 3, setup.map { |r| r[3..4] }.uniq.size
    refute_includes setup.map { |r| r[2] }, "-"
    # Every test on the worker's database ran on its own worker's lease.
    mine = setup.to_h { |r| [r[1], r[2..4]] }
    refute_empty worker
    worker.each { |r| assert_equal mine[r[1]], r[2..4], "#{r[5]} ran on another worker's database" }
    # A lease per test for ImportTest.
    assert_equal 4, per_test.size
    assert_equal 4, per_test.map { |r| r[2] }.uniq.size
    # Everything was returned, none left for the daemon to reclaim.
    assert_empty daemon.client.leases.select { |l| l["holder"].to_s.start_with?("rails ") }
    assert_equal gone, holder_gone
  end

  # No workers (PARALLEL_WORKERS=1): the single process leases one database
  # before its first test.
  def test_a_run_without_workers_leases_one_database
    log = File.join(daemon.base, "single.log")
    gone = holder_gone
    out, st = rails_test(APP, "EXAMPLE_LOG" => log, "PARALLEL_WORKERS" => "1")
    assert st.success?, out
    worker = File.readlines(log).map(&:split).select { |r| r[0] == "worker" }
    refute_empty worker
    assert_equal 1, worker.map { |r| r[1] }.uniq.size
    assert_equal 1, worker.map { |r| r[2] }.uniq.size
    refute_equal "-", worker.first[2]
    # Returned at exit, not left for the daemon to reclaim.
    assert_empty daemon.client.leases.select { |l| l["holder"].to_s.start_with?("rails ") }
    assert_equal gone, holder_gone
  end

  def test_a_failed_test_keeps_its_database_when_asked
    dir = copy_app
    File.write(File.join(dir, "test", "models", "failing_test.rb"), <<~RUBY)
      require "test_helper"
      class FailingTest < ActiveSupport::TestCase
        pristine_database_per_test
        test "fails after a commit" do
          Mark.create!(pid: 42, test: "kept")
          flunk "failing on purpose"
        end
      end
    RUBY
    File.write(File.join(dir, "test", "models", "worker_failing_test.rb"), <<~RUBY)
      require "test_helper"
      class WorkerFailingTest < ActiveSupport::TestCase
        self.use_transactional_tests = false
        test "fails on the worker's database" do
          Mark.create!(pid: 43, test: "kept")
          flunk "failing on purpose"
        end
      end
    RUBY
    File.write(File.join(dir, "test", "models", "import_test.rb"), "") # fewer tests
    out, st = rails_test(dir, "PRISTINE_KEEP_FAILED" => "1")
    refute st.success?, out
    # The worker where a test failed keeps its database, with what it committed.
    w = out.match(/pristine: kept the database of WorkerFailingTest#test_fails_on_the_worker's_database for debugging: mariadb -h(\S+) -P(\d+) -u(\S+) -p(\S+) (\S+)\npristine: release it with: pristine release (\S+)/)
    assert w, out
    db = Mysql2::Client.new(host: w[1], port: w[2].to_i, username: w[3], password: w[4], database: w[5])
    assert_includes db.query("SELECT pid FROM marks").map { |r| r["pid"] }, 43
    db.close
    daemon.client.release(w[6])
    m = out.match(/pristine: kept the database of FailingTest#test_fails_after_a_commit for debugging: (mariadb -h(\S+) -P(\d+) -u(\S+) -p(\S+) (\S+))\npristine: release it with: pristine release (\S+)/)
    assert m, out
    db = Mysql2::Client.new(host: m[2], port: m[3].to_i, username: m[4], password: m[5], database: m[6])
    assert_equal [42], db.query("SELECT pid FROM marks").map { |r| r["pid"] }, "the kept database is not the failed test's"
    db.close
    assert daemon.client.get_lease(m[7]).kept
    daemon.client.release(m[7])
  ensure
    FileUtils.rm_rf(dir) if dir
  end

  # A pool an earlier run left smaller than this run needs grows to it.
  def test_a_pool_too_small_from_an_earlier_run_grows
    out, st = rails_test(APP, "WORKERS" => "2")
    assert st.success?, out
    hash = daemon.client.pool("blog")["hash"]
    daemon.client.pool_down("blog")
    daemon.client.pool_up(hash, 1)
    out, st = rails_test(APP, "WORKERS" => "2", "POOL_SIZE" => "4")
    assert st.success?, out
    assert_includes out, "pristine: pool blog had 1 slots, this run needs 4: grew it to 4"
    assert_operator daemon.client.pool("blog")["size"].to_i, :>=, 4
  end

  # The process's database is kept as the failed test left it: a later test
  # of the same process (which would load fixtures again and commit rows)
  # runs on a fresh lease. One process and a fixed order within the class
  # make the later test certain (with workers it depends on the order).
  def test_a_failed_test_keeps_the_database_as_it_left_it
    dir = copy_app
    File.write(File.join(dir, "test", "models", "ordered_failing_test.rb"), <<~RUBY)
      require "test_helper"
      class OrderedFailingTest < ActiveSupport::TestCase
        self.use_transactional_tests = false
        i_suck_and_my_tests_are_order_dependent!
        test "a fails after a commit" do
          Mark.create!(pid: 43, test: "kept")
          flunk "failing on purpose"
        end
        test "b commits after the failure" do
          assert_equal 0, Mark.where(pid: 43).count, "this process's database after a kept one is not a fresh one"
          Mark.create!(pid: 44, test: "later")
        end
      end
    RUBY
    File.write(File.join(dir, "test", "models", "import_test.rb"), "")
    gone = holder_gone
    out, st = rails_test(dir, "PRISTINE_KEEP_FAILED" => "1", "PARALLEL_WORKERS" => "1")
    refute st.success?, out
    assert_match(/1 failures, 0 errors/, out)
    m = out.match(/pristine: kept the database of OrderedFailingTest#test_a_fails_after_a_commit for debugging: mariadb -h(\S+) -P(\d+) -u(\S+) -p(\S+) (\S+)\npristine: release it with: pristine release (\S+)/)
    assert m, out
    db = Mysql2::Client.new(host: m[1], port: m[2].to_i, username: m[3], password: m[4], database: m[5])
    assert_equal [43], db.query("SELECT pid FROM marks").map { |r| r["pid"] }, "the kept database is not as the failed test left it"
    db.close
    assert daemon.client.get_lease(m[6]).kept
    daemon.client.release(m[6])
    # The fresh database of the tests after it was returned.
    assert_empty daemon.client.leases.select { |l| l["holder"].to_s.start_with?("rails ") }
    assert_equal gone, holder_gone
  ensure
    FileUtils.rm_rf(dir) if dir
  end

  def test_no_daemon_names_the_socket_and_the_fix
    root = File.join(daemon.base, "no-daemon-here")
    out, st = rails_test(APP, "PRISTINE_ROOT" => root)
    refute st.success?
    assert_includes out, "no pristine daemon is running on #{root}/pristine.sock: start one with `pristine pool up` or `pristine serve`"
  end

  def test_failed_migrations_abort_the_template_with_their_error
    dir = copy_app
    File.delete(File.join(dir, "db", "schema.rb")) # built by db:migrate, keyed by db/migrate
    File.write(File.join(dir, "db", "migrate", "20240103000000_broken.rb"), <<~RUBY)
      class Broken < ActiveRecord::Migration[6.1]
        def change
          execute "ALTER TABLE no_such_table ADD COLUMN x INT"
        end
      end
    RUBY
    out, st = rails_test(dir)
    refute st.success?
    assert_match(/template blog: build failed, so it was aborted: `.*bin\/rails db:migrate` exited with status 1: .*no_such_table/m, out)
  ensure
    FileUtils.rm_rf(dir) if dir
  end

  def test_a_build_no_file_keys_is_refused
    dir = copy_app
    helper = File.join(dir, "test", "test_helper.rb")
    File.write(helper, File.read(helper).sub("  pristine_databases pool_size:", "  pristine_databases files: [], pool_size:"))
    out, st = rails_test(dir)
    refute st.success?
    assert_match(/runs code but no files key it.*files:.*allow_stale: true/m, out)
  ensure
    FileUtils.rm_rf(dir) if dir
  end

  def test_no_database_free_says_so_and_how_to_fix_it
    # Hold every database of the example's pool, then run with a short wait.
    out, st = rails_test(APP, "WORKERS" => "2")
    assert st.success?, out
    size = daemon.client.pool("blog")["size"].to_i
    held = Array.new(size) { daemon.client.lease(template: "blog", holder: "ruby test") }
    out, st = rails_test(APP, "WORKERS" => "2", "PRISTINE_WAIT" => "1")
    refute st.success?
    assert_match(/lease a database of blog: .+ \(the pool has \d+ databases and each worker holds one, two while a pristine_database_per_test test runs: give pristine_databases a larger pool_size/, out)
  ensure
    held&.each { |l| daemon.client.release(l.id) }
  end

  # Parity by construction (issue 22): the run that builds the template and
  # the run that reuses it give every test the same outcome. The suite
  # checks what Rails' own per-worker setup gives a database besides the
  # schema (ar_internal_metadata, database.yml's collation, a
  # parallelize_setup block declared before pristine_databases running on
  # the worker's database); a :migrate build leaves db/schema.rb alone.
  PARITY_TEST = <<~RUBY
    require "test_helper"
    require "digest"
    class ParityTest < ActiveSupport::TestCase
      test "ar_internal_metadata is what Rails' load_schema writes" do
        assert_equal "test", ActiveRecord::InternalMetadata[:environment]
        if File.exist?(Rails.root.join("db", "schema.rb"))
          assert_equal Digest::SHA1.hexdigest(File.read(Rails.root.join("db", "schema.rb"))), ActiveRecord::InternalMetadata[:schema_sha1]
        end
      end
      test "the database has database.yml's collation" do
        assert_equal "utf8mb4_bin", ActiveRecord::Base.connection.select_value("SELECT @@collation_database")
      end
      test "an early parallelize_setup block ran on this worker's database" do
        assert_equal ActiveRecord::Base.connection.select_value("SELECT DATABASE()"), $early_database
      end
      test "every migration is recorded" do
        versions = Dir[Rails.root.join("db", "migrate", "*.rb")].map { |f| File.basename(f)[/\\A\\d+/] }.sort
        assert_equal versions, ActiveRecord::Base.connection.select_values("SELECT version FROM schema_migrations ORDER BY version")
      end
    end
  RUBY

  def parity_app(build)
    dir = copy_app
    helper = File.join(dir, "test", "test_helper.rb")
    File.write(helper, File.read(helper).sub("  pristine_databases ", <<~RUBY.gsub(/^/, "  ") + "  pristine_databases "))
      parallelize_setup { |_| $early_database = ActiveRecord::Base.connection.select_value("SELECT DATABASE()") }
    RUBY
    File.write(File.join(dir, "test", "models", "parity_test.rb"), PARITY_TEST)
    yml = File.join(dir, "config", "database.yml")
    File.write(yml, File.read(yml).sub("  encoding: utf8mb4\n", "  encoding: utf8mb4\n  collation: utf8mb4_bin\n"))
    schema = File.join(dir, "db", "schema.rb")
    if build == :migrate
      File.delete(schema)
      # A key of its own: a migration only this copy has (a no-op).
      name = "parity#{Process.pid}r#{rand(1 << 30)}"
      File.write(File.join(dir, "db", "migrate", "20240101000001_#{name}.rb"),
                 "class #{name.capitalize} < ActiveRecord::Migration[6.1]\n  def change; end\nend\n")
    else
      File.write(schema, File.read(schema) + "# parity #{Process.pid} #{rand(1 << 30)}\n") # a key of its own
    end
    dir
  end

  # Per-test outcomes of `bin/rails test -v`: {"Class#test_name" => "."}.
  def outcomes(out)
    out.scan(/^(\w+#\S+) = [\d.]+ s = (\S)$/).to_h
  end

  def template_count
    Array(daemon.client.request("GET", "/v1/templates")[1]).size
  end

  def assert_parity(build)
    dir = parity_app(build)
    before = template_count
    out1, st1 = Open3.capture2e(env, Gem.ruby, "bin/rails", "test", "-v", chdir: dir)
    assert_equal before + 1, template_count, "the first run did not build a template:\n#{out1}"
    out2, st2 = Open3.capture2e(env, Gem.ruby, "bin/rails", "test", "-v", chdir: dir)
    assert_equal before + 1, template_count, "the second run built again:\n#{out2}"
    built, reused = outcomes(out1), outcomes(out2)
    assert_operator built.size, :>=, 15, out1
    assert_equal built, reused, "per-test outcomes differ between the building and the reusing run:\n#{out1}\n#{out2}"
    assert st1.success?, out1
    assert st2.success?, out2
    if build == :migrate
      refute File.exist?(File.join(dir, "db", "schema.rb")), "the :migrate build wrote db/schema.rb into the app"
    end
  ensure
    FileUtils.rm_rf(dir) if dir
  end

  def test_parity_of_the_building_and_the_reusing_run
    assert_parity(:schema_load)
  end

  def test_parity_of_the_building_and_the_reusing_run_with_migrations
    assert_parity(:migrate)
  end
end
