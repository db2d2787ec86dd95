# frozen_string_literal: true

require_relative "lib/pristine/version"

Gem::Specification.new do |s|
  s.name = "pristine"
  s.version = Pristine::VERSION
  s.summary = "A pristine MariaDB or MySQL database per test from a pristine daemon, with Rails parallel-testing hooks"
  s.description = "Leases a pristine MariaDB/MySQL database per Rails test worker (or per test) " \
                  "from a pristine daemon, building the template once from db/schema.rb or db/migrate. " \
                  "Ruby standard library only."
  s.authors = ["pristine maintainers"]
  s.license = "Apache-2.0"
  s.files = Dir["lib/**/*.rb"] + ["README.md"]
  s.require_paths = ["lib"]
  s.required_ruby_version = ">= 2.7"
  # No runtime dependencies: the Rails integration uses the application's
  # own activerecord and mysql2 (or trilogy) when it is loaded.
end
