# frozen_string_literal: true

require "digest"
require "pathname"

module Pristine
  # Content keys of templates: a hash of the files that define them. The
  # algorithm is the Go client's (client.ContentKey), Python's
  # (content_key) and PHP's (ContentKey::of), so suites in any language
  # keyed by the same files share one template; testdata/contentkey/vectors.json
  # holds the vectors every client checks.
  module ContentKey
    module_function

    # Hashes the files that define a template (migrations, fixtures, schema
    # dumps). Each pattern is a file, a directory (every file under it) or a
    # glob; names are hashed relative to the pattern's base directory, so the
    # key does not depend on where the checkout lives. +extra+ strings (a
    # tool's version, a command) are hashed too.
    def of(patterns, extra = [])
      h = Digest::SHA256.new
      h << "pristine-content-key-v1\0"
      extra.each { |e| h << "extra\0#{e}\0" }
      n = 0
      patterns.each do |pat|
        matches = glob(pat)
        if matches.empty?
          raise ArgumentError, "content key: #{pat.inspect} matches no file: name the migrations and fixtures that define the template"
        end
        matches.sort.each do |m|
          base = File.dirname(m)
          walk(m) do |path|
            rel = Pathname.new(path).relative_path_from(Pathname.new(base)).to_s
            h << "file\0#{rel}\0#{File.size(path)}\0"
            File.open(path, "rb") { |f| h.update(f.read(1 << 20)) until f.eof? }
            n += 1
          end
        end
      end
      if n.zero? && extra.empty?
        raise ArgumentError, "content key: no files: name the migrations and fixtures that define the template"
      end
      h.hexdigest
    end

    # Go's filepath.Glob, which the key's definition uses: a pattern
    # without metacharacters is the name itself when it exists; otherwise
    # each directory level's names are matched one by one (a * matches
    # names that begin with a dot too, unlike Dir.glob; no ** and no
    # {a,b}).
    def glob(pat)
      return File.exist?(pat) || File.symlink?(pat) ? [pat] : [] unless meta?(pat)

      dir, file = File.split(pat)
      dir = pat.start_with?("/") ? "/" : "." if dir.empty?
      dirs = meta?(dir) ? glob(dir) : [dir]
      dirs.flat_map do |d|
        next [] unless File.directory?(d)

        names = Dir.children(d).sort_by(&:b)
        names.select { |n| File.fnmatch(file, n, File::FNM_PATHNAME | File::FNM_DOTMATCH) }
             .map { |n| pat.start_with?("./") || File.dirname(pat) != "." ? File.join(d, n) : n }
      end
    end

    def meta?(s)
      s.match?(/[*?\[\\]/)
    end

    # The files under +path+ in the order Go's filepath.WalkDir visits them
    # (byte order of names; a symlink is hashed as the file it names, not
    # followed as a directory).
    def walk(path, &blk)
      if File.directory?(path) && !File.symlink?(path)
        Dir.children(path).sort_by(&:b).each { |name| walk(File.join(path, name), &blk) }
      else
        yield path
      end
    end
  end
end
