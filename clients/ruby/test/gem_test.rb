# frozen_string_literal: true

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "minitest/autorun"
require "open3"
require "tmpdir"

# The gem builds and installs from this directory with no network, and
# loads with nothing but Ruby's standard library.
class GemTest < Minitest::Test
  DIR = File.expand_path("..", __dir__)

  def test_builds_and_installs_from_a_path
    Dir.mktmpdir("pristine-ruby-gem-") do |tmp|
      out, st = Open3.capture2e("gem", "build", File.join(DIR, "pristine.gemspec"), "--output", File.join(tmp, "pristine.gem"), chdir: DIR)
      assert st.success?, out
      home = File.join(tmp, "home")
      out, st = Open3.capture2e("gem", "install", "--local", "--no-document", "--install-dir", home, File.join(tmp, "pristine.gem"))
      assert st.success?, out
      out, st = Open3.capture2e({ "GEM_PATH" => home, "GEM_HOME" => home, "RUBYLIB" => nil, "RUBYOPT" => "--disable-gems" },
                                Gem.ruby, "-e", <<~RUBY)
                                  $LOAD_PATH.unshift(*Dir[File.join(#{home.inspect}, "gems", "pristine-*", "lib")])
                                  require "pristine"
                                  puts Pristine::ContentKey.of([], ["x"])
                                  puts $LOADED_FEATURES.grep(/pristine/).size
                                RUBY
      assert st.success?, out
      assert_match(/\A\h{64}\n/, out)
    end
  end
end
