require "test_helper"

# Tests that cannot run in a transaction get a fresh database each: the
# rows an earlier test committed are never there.
class ImportTest < ActiveSupport::TestCase
  pristine_database_per_test

  4.times do |i|
    test "import #{i} starts from a pristine database" do
      record("test")
      assert_equal 0, Mark.count, "a committed row of an earlier test is still there"
      assert_equal 2, Post.count
      Post.transaction do
        3.times { |j| Post.create!(title: "Imported #{i}.#{j}") }
      end
      Mark.create!(pid: Process.pid, test: name)
      assert_equal 5, Post.count
    end
  end
end
