# frozen_string_literal: true

module Pristine
  # An error the daemon answered with, or a failure to reach it. +status+ is
  # the HTTP status (0 when the daemon was not reached): 400 a value the
  # daemon refuses (the message gives the allowed range), 404 no such
  # template, pool or lease, 410 a lease that was lost, 429 too many lease
  # requests in progress (+retry_after+ seconds), 503 no database free in time.
  # +code+ is the daemon's machine-readable kind of the error
  # (UNKEYED_BUILD), or "".
  class Error < StandardError
    attr_reader :status, :retry_after, :code

    def initialize(message, status = 0, retry_after = 0, code = "")
      super(message)
      @status = status
      @retry_after = retry_after
      @code = code.to_s
    end
  end

  # Error#code of a template whose build runs code (a migrate command) that
  # no file keys, refused by the daemon: the key would be the command's
  # text alone, and a changed migration would silently get the old
  # template. Each integration answers it with its own option names.
  UNKEYED_BUILD = "unkeyed_build"

  # Nothing answers where the daemon should be.
  class NoDaemonError < Error; end

  # The user's migrations or schema load failed against the template server;
  # the template was aborted, so the next run (or worker) tries again.
  class TemplateBuildError < Error; end
end
