#!/usr/bin/env bash
# doc-links.sh: every relative link in README.md and docs/**/*.md points at
# a file that exists, and a `#anchor` into a markdown file names one of its
# headings (GitHub's slugs: lower case, punctuation dropped, spaces to `-`,
# `-1`, `-2` for repeats). Links inside code blocks and code spans are text,
# not links; http(s) and mailto links are not followed. Part of `make
# test-generated`.
#
# Prints `doc-links: N links resolve` and exits 0, or one line per broken
# link (`FILE:LINE: TARGET: why`) and exits 1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mapfile -t files < <(
    echo README.md
    find docs -name '*.md' | sort
)
exec perl -CSD -e '
use strict; use warnings; use File::Basename qw(dirname); use File::Spec;
my (%slugs, $links, $bad);
sub slugs {
    my ($f) = @_;
    return $slugs{$f} if $slugs{$f};
    my (%seen, %s, $fence);
    open(my $h, "<:encoding(UTF-8)", $f) or return $slugs{$f} = {};
    while (<$h>) {
        $fence = !$fence if /^\s*```/;
        next if $fence || !/^#{1,6}\s+(.*?)\s*#*\s*$/;
        my $t = lc $1;
        $t =~ s/[^\p{L}\p{N}\s_-]//g;
        $t =~ s/\s/-/g;
        my $n = $seen{$t}++;
        $s{$n ? "$t-$n" : $t} = 1;
    }
    return $slugs{$f} = \%s;
}
for my $f (@ARGV) {
    open(my $h, "<:encoding(UTF-8)", $f) or die "$f: $!\n";
    my $fence;
    while (my $line = <$h>) {
        my $n = $.;
        if ($line =~ /^\s*```/) { $fence = !$fence; next }
        next if $fence;
        (my $text = $line) =~ s/`[^`]*`//g;
        while ($text =~ /\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g) {
            my $to = $1;
            next if $to =~ m{^(?:https?|mailto):};
            $links++;
            my ($path, $anchor) = split /#/, $to, 2;
            my $target = $path eq "" ? $f
                : File::Spec->canonpath(File::Spec->catfile(dirname($f), $path));
            if (!-e $target) {
                print "$f:$n: $to: no such file\n"; $bad++; next;
            }
            if (defined $anchor && $target =~ /\.md$/ && !slugs($target)->{$anchor}) {
                print "$f:$n: $to: no heading with that anchor in $target\n"; $bad++;
            }
        }
    }
}
if ($bad) { print "doc-links: $bad of $links links broken\n"; exit 1 }
print "doc-links: $links links resolve\n";
' "${files[@]}"
