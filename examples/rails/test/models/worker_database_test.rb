require "test_helper"

# Tests that commit, on the worker's database: every row they find is one
# their own process wrote, so no two workers share a database.
class WorkerDatabaseTest < ActiveSupport::TestCase
  self.use_transactional_tests = false

  6.times do |i|
    test "commit #{i} sees only its worker's rows" do
      record("worker")
      Mark.create!(pid: Process.pid, test: name)
      assert_equal [Process.pid], Mark.distinct.pluck(:pid), "another process wrote to this worker's database"
      if Pristine::Rails.enabled? # PRISTINE_DISABLE=1: Rails' own blog_test-N
        assert_equal Pristine::Rails.process_lease.database, ActiveRecord::Base.connection.current_database
      end
    end
  end
end
