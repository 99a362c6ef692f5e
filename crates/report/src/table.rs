//! One table model, three renderings: plain text within 80 columns (wide
//! tables break into blocks that repeat the key columns), GitHub-flavoured
//! Markdown, and HTML.

use std::fmt::Write as _;

/// Widest line of text output.
pub const TEXT_WIDTH: usize = 80;

/// Longest line of a key cell in text: a longer one continues on the
/// next lines (never shortened, so that two rows never look the same), so
/// that the key columns always leave room for the values.
const MAX_KEY_CELL: usize = 34;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

#[derive(Debug, Clone)]
pub struct Column {
    pub header: String,
    pub align: Align,
    /// Key columns identify a row; they are repeated in every block when a
    /// wide table is broken up.
    pub key: bool,
}

impl Column {
    pub fn key(header: &str) -> Column {
        Column {
            header: header.into(),
            align: Align::Left,
            key: true,
        }
    }
    pub fn left(header: &str) -> Column {
        Column {
            header: header.into(),
            align: Align::Left,
            key: false,
        }
    }
    pub fn right(header: &str) -> Column {
        Column {
            header: header.into(),
            align: Align::Right,
            key: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    Data,
    /// A summary row (geometric mean) set off by a rule in text.
    Summary,
}

#[derive(Debug, Clone)]
pub struct Row {
    pub cells: Vec<String>,
    pub kind: RowKind,
}

#[derive(Debug, Clone, Default)]
pub struct Table {
    pub title: String,
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
    /// Lines printed under the table (legends).
    pub legend: Vec<String>,
}

impl Table {
    pub fn new(title: impl Into<String>, columns: Vec<Column>) -> Table {
        Table {
            title: title.into(),
            columns,
            rows: Vec::new(),
            legend: Vec::new(),
        }
    }

    pub fn push(&mut self, cells: Vec<String>) {
        self.push_kind(cells, RowKind::Data);
    }

    pub fn push_kind(&mut self, mut cells: Vec<String>, kind: RowKind) {
        cells.resize(self.columns.len(), String::new());
        self.rows.push(Row { cells, kind });
    }

    /// Plain text, every line at most [`TEXT_WIDTH`] columns.
    pub fn to_text(&self) -> String {
        self.to_text_width(TEXT_WIDTH)
    }

    pub fn to_text_width(&self, width: usize) -> String {
        let mut out = String::new();
        for line in wrap(&self.title, width) {
            let _ = writeln!(out, "{line}");
        }
        let ncols = self.columns.len();
        let rows: Vec<(RowKind, Vec<Row>)> = self
            .rows
            .iter()
            .map(|r| (r.kind, self.text_lines(r)))
            .collect();
        let widths: Vec<usize> = (0..ncols)
            .map(|i| {
                rows.iter()
                    .flat_map(|(_, ls)| ls.iter())
                    .map(|r| r.cells[i].chars().count())
                    .chain(std::iter::once(self.columns[i].header.chars().count()))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let keys: Vec<usize> = (0..ncols).filter(|&i| self.columns[i].key).collect();
        for (b, block) in self.text_blocks(&keys, &widths, width).iter().enumerate() {
            if b > 0 {
                out.push('\n');
            }
            let cols: Vec<usize> = keys.iter().chain(block.iter()).copied().collect();
            self.text_block(&mut out, &cols, &widths, &rows, width);
        }
        for l in &self.legend {
            for line in wrap(l, width) {
                let _ = writeln!(out, "{line}");
            }
        }
        out
    }

    /// A row as lines: a long key cell continues on the next lines, the
    /// other cells are on the first.
    fn text_lines(&self, r: &Row) -> Vec<Row> {
        let pieces: Vec<Vec<String>> = (0..self.columns.len())
            .map(|i| {
                let c = &r.cells[i];
                if self.columns[i].key && c.chars().count() > MAX_KEY_CELL {
                    split_cell(c, MAX_KEY_CELL)
                } else {
                    vec![c.clone()]
                }
            })
            .collect();
        let n = pieces.iter().map(Vec::len).max().unwrap_or(1);
        (0..n)
            .map(|j| Row {
                cells: pieces
                    .iter()
                    .map(|p| p.get(j).cloned().unwrap_or_default())
                    .collect(),
                kind: if j == 0 { r.kind } else { RowKind::Data },
            })
            .collect()
    }

    /// Pack the other columns into blocks that fit beside the keys: each
    /// takes its width and the 2 spaces before it, and the keys' width
    /// counts 2 spaces after the last key too.
    fn text_blocks(&self, keys: &[usize], widths: &[usize], width: usize) -> Vec<Vec<usize>> {
        let ncols = self.columns.len();
        let others: Vec<usize> = (0..ncols).filter(|&i| !self.columns[i].key).collect();
        let key_width: usize = keys.iter().map(|&i| widths[i] + 2).sum();
        let budget = (width + 2).saturating_sub(key_width).max(1);
        let mut blocks: Vec<Vec<usize>> = Vec::new();
        let mut cur: Vec<usize> = Vec::new();
        let mut used = 0;
        for &i in &others {
            let w = widths[i] + 2;
            if !cur.is_empty() && used + w > budget {
                blocks.push(std::mem::take(&mut cur));
                used = 0;
            }
            cur.push(i);
            used += w;
        }
        if !cur.is_empty() || blocks.is_empty() {
            blocks.push(cur);
        }
        blocks
    }

    /// One block of columns: the header, a rule, and every row's lines,
    /// with a rule before the first summary row after data rows.
    fn text_block(
        &self,
        out: &mut String,
        cols: &[usize],
        widths: &[usize],
        rows: &[(RowKind, Vec<Row>)],
        width: usize,
    ) {
        let cell = |r: &Row, i: usize| -> String { r.cells[i].clone() };
        let line = |cells: &dyn Fn(usize) -> String| self.text_line(cols, widths, cells);
        let header = line(&|i| self.columns[i].header.clone());
        let rule_len = header.len().max(
            rows.iter()
                .flat_map(|(_, ls)| ls.iter())
                .map(|r| line(&|i| cell(r, i)).len())
                .max()
                .unwrap_or(0),
        );
        let _ = writeln!(out, "{header}");
        let _ = writeln!(out, "{}", "-".repeat(rule_len.min(width)));
        let mut prev = RowKind::Data;
        for (kind, ls) in rows {
            if *kind == RowKind::Summary && prev == RowKind::Data {
                let _ = writeln!(out, "{}", "-".repeat(rule_len.min(width)));
            }
            prev = *kind;
            for r in ls {
                let _ = writeln!(out, "{}", line(&|i| cell(r, i)));
            }
        }
    }

    /// One line of a block: the cells of `cols` padded to their widths
    /// and aligned, 2 spaces apart, trailing spaces trimmed.
    fn text_line(
        &self,
        cols: &[usize],
        widths: &[usize],
        cells: &dyn Fn(usize) -> String,
    ) -> String {
        let mut s = String::new();
        for (j, &i) in cols.iter().enumerate() {
            if j > 0 {
                s.push_str("  ");
            }
            let c = cells(i);
            let pad = widths[i].saturating_sub(c.chars().count());
            match self.columns[i].align {
                Align::Left => {
                    s.push_str(&c);
                    s.push_str(&" ".repeat(pad));
                }
                Align::Right => {
                    s.push_str(&" ".repeat(pad));
                    s.push_str(&c);
                }
            }
        }
        s.trim_end().to_string()
    }

    /// An AsciiDoc table, title as a section heading of `level` (`=`
    /// repeated `level + 1` times); header row, column alignment, every
    /// cell escaped with [`adoc_cell`].
    pub fn to_asciidoc(&self, level: usize) -> String {
        let mut out = String::new();
        if !self.title.is_empty() {
            let _ = writeln!(
                out,
                "{} {}\n",
                "=".repeat(level + 1),
                adoc_inline(&self.title)
            );
        }
        let cols: Vec<&str> = self
            .columns
            .iter()
            .map(|c| match c.align {
                Align::Left => "<",
                Align::Right => ">",
            })
            .collect();
        let _ = writeln!(out, "[cols=\"{}\",options=\"header\"]", cols.join(","));
        let _ = writeln!(out, "|===");
        let line = |cells: &mut dyn Iterator<Item = String>| -> String {
            cells.map(|c| format!("|{c}")).collect::<Vec<_>>().join(" ")
        };
        let _ = writeln!(
            out,
            "{}",
            line(&mut self.columns.iter().map(|c| adoc_cell(&c.header)))
        );
        out.push('\n');
        for r in &self.rows {
            let _ = writeln!(
                out,
                "{}",
                line(&mut r.cells.iter().enumerate().map(|(i, c)| {
                    if r.kind == RowKind::Summary && i == 0 && !c.is_empty() {
                        format!("*{}*", adoc_cell(c))
                    } else {
                        adoc_cell(c)
                    }
                }))
            );
        }
        let _ = writeln!(out, "|===");
        if !self.legend.is_empty() {
            out.push('\n');
            for l in &self.legend {
                let _ = writeln!(out, "{} +", adoc_inline(l));
            }
        }
        out
    }

    /// A GitHub-flavoured Markdown table, title as a heading of `level`.
    pub fn to_markdown(&self, level: usize) -> String {
        let mut out = String::new();
        if !self.title.is_empty() {
            let _ = writeln!(out, "{} {}\n", "#".repeat(level), md_inline(&self.title));
        }
        let _ = write!(out, "|");
        for c in &self.columns {
            let _ = write!(out, " {} |", md_cell(&c.header));
        }
        let _ = write!(out, "\n|");
        for c in &self.columns {
            let _ = write!(
                out,
                " {} |",
                match c.align {
                    Align::Left => ":---",
                    Align::Right => "---:",
                }
            );
        }
        out.push('\n');
        for r in &self.rows {
            let _ = write!(out, "|");
            for (i, c) in r.cells.iter().enumerate() {
                let c = md_cell(c);
                if r.kind == RowKind::Summary && i == 0 {
                    let _ = write!(out, " **{c}** |");
                } else {
                    let _ = write!(out, " {c} |");
                }
            }
            out.push('\n');
        }
        if !self.legend.is_empty() {
            out.push('\n');
            for l in &self.legend {
                let _ = writeln!(out, "{}  ", md_inline(l));
            }
        }
        out
    }

    /// An HTML `<table>` (no title; the caller places headings).
    pub fn to_html(&self) -> String {
        let mut out = String::new();
        // In a box that scrolls sideways, so a wide table never runs off
        // the page.
        let _ = write!(out, "<div class=\"table-scroll\"><table class=\"cmp\">");
        if !self.title.is_empty() {
            let _ = write!(out, "<caption>{}</caption>", html_escape(&self.title));
        }
        out.push_str("<thead><tr>");
        for c in &self.columns {
            let class = if c.align == Align::Right {
                " class=\"r\""
            } else {
                ""
            };
            let _ = write!(out, "<th{class}>{}</th>", html_escape(&c.header));
        }
        out.push_str("</tr></thead><tbody>");
        for r in &self.rows {
            let class = if r.kind == RowKind::Summary {
                " class=\"summary\""
            } else {
                ""
            };
            let _ = write!(out, "<tr{class}>");
            for (i, c) in r.cells.iter().enumerate() {
                let mut classes = Vec::new();
                if self.columns[i].align == Align::Right {
                    classes.push("r");
                }
                match c.as_str() {
                    "better" => classes.push("better"),
                    "worse" => classes.push("worse"),
                    _ => {}
                }
                let class = if classes.is_empty() {
                    String::new()
                } else {
                    format!(" class=\"{}\"", classes.join(" "))
                };
                let _ = write!(out, "<td{class}>{}</td>", html_escape(c));
            }
            out.push_str("</tr>");
        }
        out.push_str("</tbody></table></div>");
        for l in &self.legend {
            let _ = write!(out, "<p class=\"legend\">{}</p>", html_escape(l));
        }
        out
    }
}

/// A cell broken into lines of at most `max` characters: after a space
/// or a comma where it can, else anywhere. Lines after the first are
/// indented by 2.
pub fn split_cell(s: &str, max: usize) -> Vec<String> {
    let max = max.max(4);
    // Tokens end after a comma or before a space (the space is dropped
    // at a line break).
    let mut tokens: Vec<(bool, String)> = Vec::new(); // (after a space, text)
    let mut cur = String::new();
    let mut space = false;
    for c in s.chars() {
        if c == ' ' {
            if !cur.is_empty() {
                tokens.push((space, std::mem::take(&mut cur)));
            }
            space = true;
            continue;
        }
        cur.push(c);
        if c == ',' {
            tokens.push((space, std::mem::take(&mut cur)));
            space = false;
        }
    }
    if !cur.is_empty() {
        tokens.push((space, cur));
    }
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for (sp, t) in tokens {
        let room = if lines.is_empty() { max } else { max - 2 };
        let sep = if sp && !line.is_empty() { " " } else { "" };
        if line.chars().count() + sep.len() + t.chars().count() <= room {
            line.push_str(sep);
            line.push_str(&t);
            continue;
        }
        if !line.is_empty() {
            lines.push(std::mem::take(&mut line));
        }
        let mut rest: Vec<char> = t.chars().collect();
        loop {
            let room = if lines.is_empty() { max } else { max - 2 };
            if rest.len() <= room {
                line = rest.iter().collect();
                break;
            }
            lines.push(rest[..room].iter().collect());
            rest = rest[room..].to_vec();
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
        .into_iter()
        .enumerate()
        .map(|(i, l)| if i == 0 { l } else { format!("  {l}") })
        .collect()
}

/// Escape text for HTML element content and attribute values.
pub fn html_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// A table cell for GFM: pipes escaped, no line breaks, never empty-looking.
fn md_cell(s: &str) -> String {
    md_inline(s).replace('|', "\\|")
}

/// Inline AsciiDoc text: as is when nothing in it can start markup or a
/// substitution, else `pass:c[...]`, which shows the text as is (with `]`
/// escaped). Formatting marks (`*`, `_`, `` ` ``, `#`, `~`, `^`, `+`) work
/// in pairs, so a single one is harmless; brackets, braces, backslashes
/// and `<<` always pass. Line breaks become spaces.
pub fn adoc_inline(s: &str) -> String {
    let s = s.replace(['\n', '\r'], " ");
    let paired = ['*', '_', '`', '#', '~', '^', '+']
        .iter()
        .any(|&m| s.matches(m).count() >= 2);
    let always = s.contains(['[', ']', '{', '}', '\\']) || s.contains("<<");
    if !paired && !always {
        return s;
    }
    format!("pass:c[{}]", s.replace(']', "\\]"))
}

/// An AsciiDoc table cell: [`adoc_inline`] with `|` escaped, since the
/// table is split into cells before any inline markup is read.
pub fn adoc_cell(s: &str) -> String {
    adoc_inline(s).replace('|', "\\|")
}

/// Inline Markdown text: characters that would start markup are escaped.
pub fn md_inline(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' | '\r' => o.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '#' | '~' => {
                o.push('\\');
                o.push(c);
            }
            c => o.push(c),
        }
    }
    o
}

pub use numalab_linux::out::wrap;

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(n_value_cols: usize) -> Table {
        let mut cols = vec![Column::key("case"), Column::key("config")];
        for i in 0..n_value_cols {
            cols.push(Column::right(&format!("value{i}")));
        }
        let mut t = Table::new("title", cols);
        for r in 0..3 {
            let mut cells = vec![format!("numa_test tasks={r}"), "A".into()];
            for i in 0..n_value_cols {
                cells.push(format!("{r}.{i:04} [1.000, 2.000]"));
            }
            t.push(cells);
        }
        t.push_kind(vec!["geomean".into(), "A".into()], RowKind::Summary);
        t
    }

    #[test]
    fn asciidoc_text_passes_through_only_what_could_be_markup() {
        assert_eq!(adoc_inline("elapsed_s"), "elapsed_s");
        assert_eq!(adoc_inline("22.43 +-17%"), "22.43 +-17%");
        assert_eq!(adoc_inline("peak_at_s=3"), "pass:c[peak_at_s=3]");
        assert_eq!(
            adoc_inline("2.33 [0.99, 2.48]"),
            "pass:c[2.33 [0.99, 2.48\\]]"
        );
        assert_eq!(adoc_cell("a|b [x]"), "pass:c[a\\|b [x\\]]");
        assert_eq!(adoc_inline("two\nlines"), "two lines");
    }

    #[test]
    fn narrow_table_is_one_block() {
        let t = sample(2).to_text();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "title");
        assert!(lines[1].starts_with("case               config"), "{t}");
        assert!(lines[2].starts_with("-----"));
        assert_eq!(lines.len(), 8, "{t}"); // title, header, rule, 3 rows, rule, geomean
        assert!(lines[6].starts_with("---"));
        assert!(lines[7].starts_with("geomean"));
    }

    #[test]
    fn wide_table_breaks_into_blocks_repeating_keys() {
        let t = sample(6).to_text();
        assert!(t.lines().all(|l| l.len() <= TEXT_WIDTH), "{t}");
        let headers: Vec<&str> = t.lines().filter(|l| l.starts_with("case ")).collect();
        assert!(headers.len() >= 2, "{t}");
        for i in 0..6 {
            assert!(t.contains(&format!("value{i}")), "{t}");
        }
        // Every block lists every row's key.
        assert_eq!(t.matches("numa_test tasks=1").count(), headers.len(), "{t}");
    }

    #[test]
    fn long_keys_continue_on_the_next_lines() {
        let mut t = Table::new("", vec![Column::key("k"), Column::right("v")]);
        let long = "x".repeat(100);
        t.push(vec![long.clone(), "1".into()]);
        let case = "numa01 bytes=1073741824 command=sh,-c,sleep 1 loops=3 threads=4";
        t.push(vec![case.into(), "2".into()]);
        t.push(vec!["geomean".into(), "3".into()]);
        let text = t.to_text();
        assert!(text.lines().all(|l| l.len() <= TEXT_WIDTH), "{text}");
        assert!(!text.contains("..."), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        // Nothing is lost: the pieces of the key put together are the key.
        let keys: String = lines[2..6]
            .iter()
            .map(|l| l.trim_end_matches(" 1").trim())
            .collect();
        assert_eq!(keys, long, "{text}");
        assert!(lines[2].ends_with(" 1"), "{text}");
        assert!(lines[6].starts_with("numa01 bytes=1073741824"), "{text}");
        assert!(lines[6].ends_with(" 2"), "{text}");
        assert_eq!(lines[7], "  command=sh,-c,sleep 1 loops=3", "{text}");
        assert_eq!(lines[8], "  threads=4", "{text}");
        assert!(lines[9].starts_with("geomean "), "{text}");
        assert!(t.to_markdown(2).contains(&long));
        assert_eq!(
            split_cell("aaaa,bbbb,cccc", 10),
            vec!["aaaa,bbbb,", "  cccc"]
        );
        assert_eq!(split_cell("short", 10), vec!["short"]);
    }

    #[test]
    fn markdown_is_a_gfm_table() {
        let mut t = sample(2);
        t.rows[0].cells[1] = "a|b".into();
        let md = t.to_markdown(3);
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(lines[0], "### title");
        assert_eq!(lines[2], "| case | config | value0 | value1 |");
        assert_eq!(lines[3], "| :--- | :--- | ---: | ---: |");
        assert!(lines[4].contains("a\\|b"));
        assert!(lines[7].starts_with("| **geomean** |"));
        // Every row has the same number of unescaped pipes.
        for l in &lines[2..8] {
            let pipes = l.replace("\\|", "").matches('|').count();
            assert_eq!(pipes, 5, "{l}");
        }
    }

    #[test]
    fn html_escapes() {
        let mut t = Table::new("<t>", vec![Column::key("k")]);
        t.push(vec!["a&b".into()]);
        let h = t.to_html();
        assert!(h.contains("<caption>&lt;t&gt;</caption>"));
        assert!(h.contains("<td>a&amp;b</td>"));
    }

    #[test]
    fn wrapping() {
        let w = wrap(&format!("[12] {}", "word ".repeat(40)), 40);
        assert!(w.len() > 2);
        assert!(w.iter().all(|l| l.len() <= 40), "{w:?}");
        assert!(w[1].starts_with("     word"), "{w:?}");
        let w = wrap(&format!("  A  {}", "word ".repeat(30)), 40);
        assert!(w[0].starts_with("  A  word"), "{w:?}");
        assert!(w[1].starts_with("    word"), "{w:?}");
    }

    #[test]
    fn wraps_at_width() {
        assert_eq!(wrap("aaa bbb ccc ddd", 8), ["aaa bbb", "  ccc", "  ddd"]);
        assert_eq!(wrap("  aaa bbb", 8), ["  aaa", "    bbb"]);
        assert_eq!(wrap("short", 8), ["short"]);
        assert!(wrap("", 8).is_empty());
    }

    #[test]
    fn long_words_and_hyphens_are_never_broken() {
        let path = "/home/user/numalab-results/20260101T000000Z-numa01-default-r1.json";
        let w = wrap(&format!("numalab: wrote {path} (4 runs)"), 40);
        assert_eq!(w, ["numalab: wrote", &format!("  {path}"), "  (4 runs)"]);
        let w = wrap(&"y".repeat(100), 30);
        assert_eq!(w, ["y".repeat(100)]);
        // Hyphenated words stay whole: flags, placements, paths.
        let w = wrap("use --placement default,inverse-bind here", 20);
        assert_eq!(w, ["use --placement", "  default,inverse-bind", "  here"]);
    }
}
