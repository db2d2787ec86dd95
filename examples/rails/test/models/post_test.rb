require "test_helper"

# Transactional tests on the worker's pristine database: each sees the
# fixtures and nothing any other test wrote.
class PostTest < ActiveSupport::TestCase
  8.times do |i|
    test "post #{i} sees only the fixtures and its own writes" do
      record("worker")
      assert_equal %w[Again Hello], Post.order(:title).pluck(:title)
      assert_equal 1, Comment.count
      post = Post.create!(title: "Post #{i} of #{Process.pid}")
      post.comments.create!(author: "bo", body: "test #{i}")
      assert_equal 3, Post.count
      assert_equal 2, Comment.count
      assert_equal 0, Mark.count
    end
  end

  test "titles are unique" do
    assert_raises(ActiveRecord::RecordInvalid) { Post.create!(title: "Hello") }
  end
end
