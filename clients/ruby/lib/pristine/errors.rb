# frozen_string_literal: true

module Pristine
  # An error the daemon answered with, or a failure to reach it. +status+ is
  # the HTTP status (0 when the daemon was not reached): 400 a value the
  # daemon refuses (the message gives the allowed range), 404 no such
  # template, pool or lease, 410 a lease that was lost, 429 too many lease
  # requests in progress (+retry_after+ seconds), 503 no database free in time.
  class Error < StandardError
    attr_reader :status, :retry_after

    def initialize(message, status = 0, retry_after = 0)
      super(message)
      @status = status
      @retry_after = retry_after
    end
  end

  # Nothing answers where the daemon should be.
  class NoDaemonError < Error; end

  # The user's migrations or schema load failed against the template server;
  # the template was aborted, so the next run (or worker) tries again.
  class TemplateBuildError < Error; end
end
