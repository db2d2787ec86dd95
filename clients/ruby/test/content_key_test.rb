# frozen_string_literal: true

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "minitest/autorun"
require "pristine"
require "json"
require "tmpdir"
require "fileutils"

class ContentKeyTest < Minitest::Test
  VECTORS = File.expand_path("../../../testdata/contentkey/vectors.json", __dir__)

  def write(dir, files)
    files.each do |name, body|
      p = File.join(dir, name)
      FileUtils.mkdir_p(File.dirname(p))
      File.binwrite(p, body)
    end
  end

  # The vectors the Go client's test checks too (client/vectors_test.go).
  def test_shared_vectors
    vectors = JSON.parse(File.read(VECTORS))["vectors"]
    refute_empty vectors
    vectors.each do |v|
      Dir.mktmpdir do |d|
        write(d, v["files"])
        # Absolute patterns and patterns relative to the working directory give the same key.
        assert_equal v["key"], Pristine::ContentKey.of(v["patterns"].map { |p| File.join(d, p) }, v["extra"]), v["name"]
        Dir.chdir(d) { assert_equal v["key"], Pristine::ContentKey.of(v["patterns"], v["extra"]), v["name"] }
      end
    end
  end

  def test_changes_change_the_key
    base = { "m/001.sql" => "CREATE TABLE a (id INT);", "m/sub/002.sql" => "CREATE TABLE b (id INT);" }
    key = lambda do |files, extra = []|
      Dir.mktmpdir do |d|
        write(d, files)
        Pristine::ContentKey.of([File.join(d, "m")], extra)
      end
    end
    k0 = key.(base)
    assert_equal k0, key.(base), "the same files elsewhere"
    refute_equal k0, key.(base.merge("m/001.sql" => "CREATE TABLE a (id BIGINT);")), "a byte changed"
    refute_equal k0, key.({ "m/001.sql" => base["m/001.sql"], "m/sub/003.sql" => base["m/sub/002.sql"] }), "a file renamed"
    refute_equal k0, key.(base.merge("m/x" => "")), "a file added"
    refute_equal k0, key.(base, ["tool 1.2"]), "an extra string"
  end

  def test_a_pattern_matching_nothing_names_the_fix
    e = assert_raises(ArgumentError) { Pristine::ContentKey.of([File.join(Dir.tmpdir, "pristine-nope-#{$$}")]) }
    assert_match(/matches no file: name the migrations and fixtures/, e.message)
    e = assert_raises(ArgumentError) { Pristine::ContentKey.of([]) }
    assert_match(/no files/, e.message)
  end
end
