# frozen_string_literal: true

require "etc"
require "shellwords"
require "tmpdir"
require_relative "../pristine"

module Pristine
  # Rails' parallel testing on pristine leases instead of a `db_test-N`
  # database created and schema-loaded in every worker. In
  # test/test_helper.rb:
  #
  #   require_relative "../config/environment"
  #   require "pristine/rails"            # before rails/test_help
  #   require "rails/test_help"
  #
  #   class ActiveSupport::TestCase
  #     parallelize(workers: :number_of_processors)
  #     pristine_databases                # the one-line change
  #     fixtures :all
  #   end
  #
  # and, for a test class that cannot run in a transaction, a fresh database
  # per test:
  #
  #   class ImportTest < ActiveSupport::TestCase
  #     pristine_database_per_test
  #   end
  #
  # pristine_databases builds the template once (keyed by db/schema.rb or
  # db/structure.sql, or db/migrate when there is no schema dump; built by
  # `bin/rails db:schema:load` or `bin/rails db:migrate` against the
  # template server) and brings a pool up, in the process that loads the
  # tests, before Rails forks its workers. Each worker leases its database
  # where Rails would create and load its db_test-N (the after-fork hook
  # ActiveRecord::TestDatabases.create_and_load_schema, before any
  # parallelize_setup block), held by the worker's pid so a killed
  # worker's database is reclaimed, and points ActiveRecord::Base at it; a
  # parallelize_teardown hook releases it.
  #
  # Parity by construction: a run that builds the template and a run that
  # reuses it do the same in every process. The build (a subprocess) does
  # only what Rails' own per-worker setup does to the database: the
  # database's character set and collation of database.yml (Rails' purge),
  # the schema load, and ar_internal_metadata's environment and
  # schema_sha1 (Rails' load_schema); a :migrate build writes its schema
  # dump to a temporary file, not db/schema.rb. Everything else (fixtures,
  # parallelize_setup blocks, the connection) runs in every process of
  # every run. See docs/ruby.md. A run without workers (one
  # process, or under Rails 7.1's parallelize threshold) leases one database
  # for the process before its first test.
  #
  # Tested with Debian 12's Rails 6.1 (ruby-rails, ruby-mysql2); see
  # docs/ruby.md for what depends on the Rails version.
  module Rails
    # What pristine_databases was given (see docs/ruby.md for each option).
    Config = Struct.new(:template, :files, :build, :command, :seed, :pool_size, :wait, :build_wait,
                        :keep_failed, :release, :cache, :database, :holder, :allow_stale, keyword_init: true)

    class << self
      # The Config of this run (nil until pristine_databases).
      attr_reader :config
      # The ready template's hash.
      attr_reader :template_hash
      # The lease of this process (a worker's, or the single process's).
      attr_reader :process_lease

      # Whether pristine provides this run's databases.
      def enabled?
        !@config.nil?
      end

      # PRISTINE_DISABLE=1 runs Rails' own path (database.yml's test
      # database, db_test-N per worker), to compare or to fall back.
      def disabled_by_env?
        ENV["PRISTINE_DISABLE"] == "1"
      end

      # The client of $PRISTINE_URL or $PRISTINE_ROOT (or the default root).
      def client
        @client ||= Client.from_env
      end

      # Sets the run up: keys, builds (once, across processes and runs) and
      # pools the template, in the calling (parent) process.
      def setup(template: nil, files: nil, build: nil, command: nil, seed: false, pool_size: nil,
                wait: nil, build_wait: 1800, keep_failed: nil, release: :unchanged, cache: nil,
                database: nil, holder: nil, allow_stale: false)
        root = ::Rails.root.to_s
        format = schema_format
        schema = File.join(root, "db", format == :sql ? "structure.sql" : "schema.rb")
        build ||= File.exist?(schema) ? :schema_load : :migrate
        command ||= case build
                    when :schema_load then "bin/rails db:schema:load"
                    when :migrate then "bin/rails db:migrate"
                    else
                      raise ArgumentError, "pristine_databases: build: #{build.inspect}: use :schema_load, :migrate, " \
                                           "or command: \"a shell command\""
                    end
        command += " db:seed" if seed
        files ||= build == :schema_load ? [schema] : [File.join(root, "db", "migrate")]
        files += [File.join(root, "db", "seeds.rb")] if seed && File.exist?(File.join(root, "db", "seeds.rb"))
        keep_failed = ENV["PRISTINE_KEEP_FAILED"] == "1" if keep_failed.nil?
        wait ||= Float(ENV.fetch("PRISTINE_WAIT", "120"))
        @config = Config.new(template: template || default_template_name, files: files, build: build,
                             command: command, seed: seed, pool_size: pool_size || default_pool_size,
                             wait: wait, build_wait: build_wait, keep_failed: keep_failed,
                             release: release, cache: cache, database: database,
                             holder: holder || "rails #{File.basename(root)}", allow_stale: allow_stale)
        @base_config = connection_config_hash
        @failed = []
        prepare
        # Rails 7.1+: its own switch for the db_test-N databases; 6.1 and 7.0
        # have none (SkipStockTestDatabases covers them).
        ActiveSupport.parallelize_test_databases = false if ActiveSupport.respond_to?(:parallelize_test_databases=)
        self
      end

      # Builds the template once and brings the pool up.
      def prepare
        c = config
        key = ContentKey.of(c.files, ["rails #{::Rails.version}", c.command, @base_config[:adapter].to_s,
                                      "encoding #{@base_config[:encoding]}", "collation #{@base_config[:collation]}"])
        t = begin
          Pristine.ensure_template(client, c.template, key, database: c.database, wait: c.build_wait, cache: c.cache,
                                                            key_files: c.files.size, allow_stale: c.allow_stale) do |conn|
            build_template(conn)
          end
        rescue Error => e
          raise e unless e.code == UNKEYED_BUILD

          raise Error.new("pristine_databases: template #{c.template}: `#{c.command}` runs code but no files key it, " \
                          "so after a migration or the schema changes every run would still get the old template: " \
                          "name what it reads in files: (default db/schema.rb, db/structure.sql or db/migrate), " \
                          "or pass allow_stale: true to accept a template that goes stale when they change",
                          e.status, 0, e.code)
        end
        @template_hash = t["hash"]
        Pristine.ensure_pool(client, c.template, @template_hash, c.pool_size)
      end

      # Runs the build command (bin/rails db:schema:load, ...) in the
      # application's root against the template server: Rails reads it from
      # DATABASE_URL (mysql2://...), which overrides database.yml's test
      # connection in that process only.
      def build_template(conn)
        env = { "RAILS_ENV" => ::Rails.env.to_s, "DISABLE_DATABASE_ENVIRONMENT_CHECK" => "1",
                "PRISTINE_BUILDING" => "1" }
        adapter = @base_config[:adapter].to_s
        lease = Lease.from_json(conn.merge("id" => ""))
        env["DATABASE_URL"] = lease.database_url(adapter) unless adapter.empty?
        apply_database_options(lease)
        cmd = config.command
        cmd = "#{Shellwords.escape(Gem.ruby)} #{cmd}" if cmd.start_with?("bin/rails ", "bin/rake ")
        Dir.mktmpdir("pristine-rails-schema-") do |tmp|
          # db:migrate dumps the schema after migrating: into a file of its
          # own, so the run that builds leaves db/schema.rb (and the next
          # run's key) as the run that reuses does.
          if config.build == :migrate && !ENV["SCHEMA"]
            env["SCHEMA"] = File.join(tmp, schema_format == :sql ? "structure.sql" : "schema.rb")
          end
          Pristine.run_command(cmd, conn, chdir: ::Rails.root.to_s, env: env)
        end
      end

      # The template database's character set and collation, as Rails'
      # purge creates db_test-N with them (database.yml's collation, else
      # its encoding, else utf8mb4), so tables and temporary tables tests
      # create without options get what they get on Rails' own path.
      def apply_database_options(lease)
        return unless @base_config[:adapter].to_s.start_with?("mysql", "trilogy") && defined?(::Mysql2::Client)

        clause = if @base_config[:collation]
                   "DEFAULT COLLATE #{quote_name(@base_config[:collation])}"
                 else
                   "DEFAULT CHARACTER SET #{quote_name(@base_config[:encoding] || 'utf8mb4')}"
                 end
        db = ::Mysql2::Client.new(**lease.active_record_config.except(:database))
        begin
          db.query("ALTER DATABASE #{quote_name(lease.database)} #{clause}")
        ensure
          db.close
        end
      rescue ::Mysql2::Error => e
        raise Error.new("template #{config.template}: set its database's character set and collation " \
                        "(#{clause}) as database.yml asks: #{e.message}", 0)
      end

      def quote_name(name)
        "`#{name.to_s.gsub('`', '``')}`"
      end

      # Leases this process's database (once per process) and points
      # ActiveRecord::Base at it.
      def lease_process!(holder = nil)
        return @process_lease if @process_lease && @process_lease_pid == Process.pid

        LOCK.synchronize { lease_process_locked(holder) }
      end

      # parallelize(with: :threads): the threads of a process share its lease.
      LOCK = Mutex.new
      private_constant :LOCK

      def lease_process_locked(holder)
        return @process_lease if @process_lease && @process_lease_pid == Process.pid
        # A worker whose lease failed fails each of its tests with that
        # error, at once (Rails also reports it as the worker's setup error).
        raise @process_error if @process_error && @process_error_pid == Process.pid

        @process_lease = nil
        @failed = []
        # A worker's replacement for a kept database keeps its holder name.
        @process_holder = nil if @process_holder_pid != Process.pid
        @process_holder = holder if holder
        @process_holder_pid = Process.pid
        holder = @process_holder || "#{config.holder} pid #{Process.pid}"
        begin
          @process_lease = lease(holder, extra: kept_here)
        rescue StandardError => e
          @process_error = e
          @process_error_pid = Process.pid
          raise
        end
        @process_lease_pid = Process.pid
        if @at_exit_pid != Process.pid
          @at_exit_pid = pid = Process.pid
          at_exit { release_process! if Process.pid == pid }
        end
        connect(@process_lease)
        @process_lease
      end

      # Releases (or, when a test failed and keep_failed is set, keeps) this
      # process's database.
      def release_process!
        l = @process_lease
        return unless l && @process_lease_pid == Process.pid

        @process_lease = nil
        disconnect
        finish(l, @failed)
      end

      # A fresh lease for one test (pristine_database_per_test).
      def lease_test!(name)
        l = lease("#{config.holder} #{name}")
        connect(l)
        l
      end

      # Ends a test's own lease and points ActiveRecord::Base back at the
      # process's database.
      def release_test!(lease, failed_name)
        disconnect
        finish(lease, failed_name ? [failed_name] : [])
        connect(@process_lease) if @process_lease && @process_lease_pid == Process.pid
      end

      # A test failed on this process's database. With keep_failed the
      # database is kept now, as that test left it (a later test of the
      # worker would change it: fixtures are loaded again, rows committed),
      # and the process's next test leases a fresh one. Under
      # parallelize(with: :threads) the threads share the database, so it
      # is kept when the process ends instead.
      def failed!(name)
        return unless config.keep_failed

        l = @process_lease
        return unless l && @process_lease_pid == Process.pid

        if threads?
          @failed << name
          return
        end
        LOCK.synchronize do
          @process_lease = nil
          disconnect
          finish(l, [name])
          @kept_count = kept_here + 1
          @kept_pid = Process.pid
          forget_loaded_fixtures
        end
      end

      # How many databases this process kept so far.
      def kept_here
        @kept_pid == Process.pid ? @kept_count.to_i : 0
      end

      # The connection settings of database.yml's test database, with the
      # lease's host, port, user, password and database.
      def connection_for(lease)
        @base_config.except(:url, :socket).merge(lease.active_record_config)
      end

      private

      # Every lease carries min_size, the run's pool size plus the
      # databases this process kept: a pool that is smaller (another run's,
      # or shrunk since) grows to it before the lease waits.
      def lease(holder, extra: 0)
        client.lease(template: config.template, holder: holder, wait: config.wait,
                     min_size: config.pool_size + extra)
      rescue NoDaemonError
        raise
      rescue Error => e
        raise e unless e.status == 503

        size = (client.pool(config.template)["size"] rescue nil) || config.pool_size
        raise Error.new("lease a database of #{config.template}: #{e.message} (the pool has #{size} databases " \
                        "and each worker holds one, two while a pristine_database_per_test test runs: give " \
                        "pristine_databases a larger pool_size, or run fewer workers, or wait longer with " \
                        "wait: or PRISTINE_WAIT)", e.status)
      end

      def finish(lease, failed)
        if config.keep_failed && !failed.empty?
          client.keep(lease.id)
          warn "pristine: kept the database of #{failed.join(', ')} for debugging: #{lease.mysql_command}\n" \
               "pristine: release it with: pristine release #{lease.id}"
        else
          client.release(lease.id, unchanged: config.release.to_s == "unchanged")
        end
      rescue Error => e
        warn "pristine: release #{lease.id}: #{e.message}"
      end

      def connect(lease)
        ActiveRecord::Base.establish_connection(connection_for(lease))
      end

      # Rails loads a transactional test class's fixtures once per process
      # and remembers it; on a fresh database they must be loaded again.
      def forget_loaded_fixtures
        if ActiveRecord::TestFixtures.class_variable_defined?(:@@already_loaded_fixtures)
          ActiveRecord::TestFixtures.class_variable_get(:@@already_loaded_fixtures)&.clear
        end
        ActiveRecord::FixtureSet.reset_cache if ActiveRecord::FixtureSet.respond_to?(:reset_cache)
      rescue NameError
        nil
      end

      # parallelize(with: :threads) (or parallelize_me!): several tests of
      # this process run at once, on one database.
      def threads?
        defined?(ActiveSupport::TestCase) && ActiveSupport::TestCase.test_order == :parallel &&
          !(defined?(ActiveSupport::Testing::Parallelization) &&
            Minitest.parallel_executor.is_a?(ActiveSupport::Testing::Parallelization))
      end

      def disconnect
        ActiveRecord::Base.connection_pool.disconnect!
      rescue StandardError
        nil
      end

      def connection_config_hash
        if ActiveRecord::Base.respond_to?(:connection_db_config)
          ActiveRecord::Base.connection_db_config.configuration_hash.dup # Rails 6.1+
        else
          ActiveRecord::Base.connection_config.dup # Rails 6.0
        end
      end

      def schema_format
        (ActiveRecord.respond_to?(:schema_format) ? ActiveRecord.schema_format : ActiveRecord::Base.schema_format).to_sym
      end

      def default_template_name
        ::Rails.application.class.name.to_s.split("::").first.to_s.downcase.then { |n| n.empty? ? "rails" : n }
      end

      def default_pool_size
        n = ENV["PARALLEL_WORKERS"].to_i
        ex = defined?(Minitest.parallel_executor) && Minitest.parallel_executor
        n = ex.instance_variable_get(:@worker_count).to_i if n.zero? && ex
        n = ex.size.to_i if n.zero? && ex.respond_to?(:size)
        n = Etc.nprocessors if n.zero?
        n + 1
      end

      # The template is keyed by the schema, so a lease is never behind it:
      # Rails' check of database.yml's own test database is not needed (and
      # that database need not exist).
      def disable_schema_maintenance!
        if ActiveRecord.respond_to?(:maintain_test_schema=)
          ActiveRecord.maintain_test_schema = false # Rails 7.0+
        end
        if ActiveRecord::Base.respond_to?(:maintain_test_schema=)
          ActiveRecord::Base.maintain_test_schema = false
        end
      end
    end

    # Rails' own worker hook (ActiveRecord::TestDatabases.create_and_load_schema,
    # registered by rails/test_help before any parallelize_setup block)
    # creates db_test-N and loads the schema; with pristine the worker leases
    # its database there, so parallelize_setup blocks (whenever they were
    # declared) run on it, in the order they do on Rails' own path.
    module SkipStockTestDatabases
      def create_and_load_schema(i, *args, **kwargs)
        return super unless Pristine::Rails.enabled?

        Pristine::Rails.lease_process!("#{Pristine::Rails.config.holder} worker #{i}")
      end
    end

    # Class methods of ActiveSupport::TestCase.
    module ClassMethods
      # Gives every test process (each parallelize worker, or the single
      # process) its own pristine database. Options: template (default the
      # application's name), files, build (:schema_load or :migrate),
      # command, seed, pool_size (default workers + 1), wait (seconds for a
      # free database, default $PRISTINE_WAIT or 120), build_wait,
      # keep_failed (default $PRISTINE_KEEP_FAILED=1), release (:unchanged
      # or :dirty), cache (default $PRISTINE_CACHE), database.
      def pristine_databases(**options)
        return if Pristine::Rails.disabled_by_env?

        Pristine::Rails.setup(**options)
        # The worker's lease is taken in create_and_load_schema (see
        # SkipStockTestDatabases); this is a no-op then, and leases where
        # that hook is not registered.
        parallelize_setup { |i| Pristine::Rails.lease_process!("#{Pristine::Rails.config.holder} worker #{i}") }
        parallelize_teardown { |_| Pristine::Rails.release_process! }
      end

      # A fresh pristine database for every test of this class, for tests
      # that cannot run in a transaction (they commit, or use several
      # connections): transactional tests are turned off for it.
      def pristine_database_per_test
        self.use_transactional_tests = false if respond_to?(:use_transactional_tests=)
        self.pristine_scope = :test
      end
    end

    # Instance hooks of ActiveSupport::TestCase (prepended: they run before
    # fixtures are loaded and after they are torn down).
    module TestHooks
      def before_setup
        if Pristine::Rails.enabled?
          if self.class.pristine_scope == :test
            @pristine_test_lease = Pristine::Rails.lease_test!("#{self.class.name}##{name}")
          else
            Pristine::Rails.lease_process! # a no-op in a worker; the first test's lease in a single process
          end
        end
        super
      end

      def after_teardown
        super
      ensure
        if Pristine::Rails.enabled?
          failed = !passed? && !skipped? ? "#{self.class.name}##{name}" : nil
          if @pristine_test_lease
            l = @pristine_test_lease
            @pristine_test_lease = nil
            Pristine::Rails.release_test!(l, failed)
          elsif failed
            Pristine::Rails.failed!(failed)
          end
        end
      end
    end
  end
end

# Required before rails/test_help, pristine/rails turns off Rails' check of
# database.yml's own test database (ActiveRecord::Migration.maintain_test_schema!):
# each lease comes from a template keyed by the schema, and that database
# need not exist.
unless Pristine::Rails.disabled_by_env?
  ActiveSupport.on_load(:active_record) { Pristine::Rails.send(:disable_schema_maintenance!) }
end

ActiveSupport.on_load(:active_support_test_case) do
  class_attribute :pristine_scope, default: :process
  extend Pristine::Rails::ClassMethods
  prepend Pristine::Rails::TestHooks
end

ActiveSupport.on_load(:active_record) do
  require "active_record/test_databases"
  ActiveRecord::TestDatabases.singleton_class.prepend(Pristine::Rails::SkipStockTestDatabases)
end
