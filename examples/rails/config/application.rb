require_relative "boot"

require "rails"
require "active_record/railtie"
require "rails/test_unit/railtie"

module Blog
  # A minimal Rails application: posts and comments, for examples/rails.
  class Application < Rails::Application
    config.load_defaults 6.1
    config.eager_load = false
    config.logger = Logger.new(nil)
    config.active_support.deprecation = :stderr
    config.secret_key_base = "examples-rails-not-a-secret"
  end
end
