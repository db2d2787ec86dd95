# frozen_string_literal: true

# The Ruby client of pristine's daemon: every test gets its own pristine
# MariaDB/MySQL database. Pristine::Client speaks the daemon's HTTP API;
# Pristine.ensure_template, Pristine.ensure_pool and Pristine::ContentKey
# are the build-once flow every pristine client shares; pristine/rails
# hooks Rails' parallel testing (see docs/ruby.md).
module Pristine
end

require_relative "pristine/version"
require_relative "pristine/errors"
require_relative "pristine/lease"
require_relative "pristine/content_key"
require_relative "pristine/client"
require_relative "pristine/ensure"
