# Bundler would load pathname; Rails 6.1's commands need it.
require "pathname"

# Without Bundler (rubygems.org is not needed): the system's rails and
# mysql2 (Debian's ruby-rails, ruby-mysql2), and the pristine gem from
# this checkout unless it is installed (`gem install pristine-*.gem`).
if File.exist?(ENV["BUNDLE_GEMFILE"].to_s) && ENV["BUNDLE_GEMFILE"].to_s != ""
  require "bundler/setup"
else
  begin
    gem "pristine"
  rescue Gem::LoadError
    $LOAD_PATH.unshift File.expand_path("../../../clients/ruby/lib", __dir__)
  end
end
