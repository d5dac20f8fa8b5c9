package ext

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dsh-dev/dsh/core/lazyre"
	"github.com/dsh-dev/dsh/core/saferead"
)

// Bounds of the skill catalog the model is told of.
const (
	// maxSkillDescription bounds one description in the catalog (the
	// Agent Skills specification's maximum).
	maxSkillDescription = 1024
	// MaxCatalogBytes bounds the whole catalog; skills past it are
	// named in a count only.
	MaxCatalogBytes = 12 << 10
	// maxSkillFiles bounds the other files a skill's listing names.
	maxSkillFiles = 200
)

// Skill is a SKILL.md folder.
type Skill struct {
	Name        string
	Description string
	// Dir is the skill's folder; Path its SKILL.md.
	Dir   string
	Path  string
	Scope Scope
	pol   saferead.Policy
}

var skillName = lazyre.New(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// LoadSkills reads the skills of roots: each folder with a SKILL.md
// directly under a skills folder. A name found twice is the nearest
// project's. A skill without a description is skipped (nothing would
// tell the model when to use it); a name that breaks the specification's
// rules still loads, with a diagnostic.
func LoadSkills(r Roots) ([]Skill, []Diagnostic) {
	var out []Skill
	var diags []Diagnostic
	seen := map[string]string{}
	for _, pl := range r.places("skills", true) {
		entries, err := os.ReadDir(pl.dir)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				diags = append(diags, Diagnostic{pl.dir, describeErr(err).Error()})
			}
			continue
		}
		if len(entries) > maxFilesPerDir {
			diags = append(diags, Diagnostic{pl.dir, fmt.Sprintf("more than %d entries; only the first %d (by name) are read", maxFilesPerDir, maxFilesPerDir)})
			entries = entries[:maxFilesPerDir]
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			dir := filepath.Join(pl.dir, e.Name())
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				if err != nil {
					diags = append(diags, Diagnostic{dir, describeErr(err).Error()})
				}
				continue
			}
			sk, ds, ok := readSkill(dir, e.Name(), pl)
			diags = append(diags, ds...)
			if !ok {
				continue
			}
			if p, dup := seen[sk.Name]; dup {
				diags = append(diags, Diagnostic{sk.Path, fmt.Sprintf("skill %q is already defined by %s; this one is not used", sk.Name, p)})
				continue
			}
			seen[sk.Name] = sk.Path
			out = append(out, sk)
		}
	}
	return out, diags
}

func readSkill(dir, folder string, pl place) (Skill, []Diagnostic, bool) {
	path := filepath.Join(dir, "SKILL.md")
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return Skill{}, nil, false // a folder that is not a skill
	}
	data, err := readFile(pl.pol, path, MaxFileBytes)
	if err != nil {
		return Skill{}, []Diagnostic{{path, err.Error()}}, false
	}
	m, _, err := splitFrontmatter(data)
	if err != nil {
		return Skill{}, []Diagnostic{{path, err.Error()}}, false
	}
	sk := Skill{Name: m.str("name"), Description: oneLine(m.str("description")), Dir: dir, Path: path, Scope: pl.scope, pol: pl.pol}
	var diags []Diagnostic
	if sk.Name == "" {
		sk.Name = folder
	}
	if !skillName().MatchString(sk.Name) || len(sk.Name) > 64 || sk.Name != folder {
		diags = append(diags, Diagnostic{path, fmt.Sprintf("skill name %q should be 1-64 of a-z, 0-9 and single hyphens, equal to its folder %q; loaded anyway", sk.Name, folder)})
	}
	if sk.Description == "" {
		return Skill{}, append(diags, Diagnostic{path, "no description in the frontmatter; the skill is not offered"}), false
	}
	if r := []rune(sk.Description); len(r) > maxSkillDescription {
		sk.Description = string(r[:maxSkillDescription-1]) + "…"
	}
	return sk, diags, true
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Catalog is what the model is told of the skills: one line each, name
// and description, sorted by name, bounded by MaxCatalogBytes. The same
// skills give the same bytes.
func Catalog(skills []Skill) string {
	if len(skills) == 0 {
		return ""
	}
	sorted := append([]Skill(nil), skills...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var b strings.Builder
	left := 0
	for i, s := range sorted {
		line := "- " + s.Name + ": " + s.Description + "\n"
		if b.Len()+len(line) > MaxCatalogBytes {
			left = len(sorted) - i
			break
		}
		b.WriteString(line)
	}
	if left > 0 {
		fmt.Fprintf(&b, "- (%d more skills not listed: the list is full; the skill tool still loads them by name)\n", left)
	}
	return b.String()
}

// Body returns a skill's instructions (SKILL.md without its frontmatter)
// and the other files of its folder, relative, sorted, bounded.
func (s Skill) Body() (string, []string, error) {
	data, err := readFile(s.pol, s.Path, MaxFileBytes)
	if err != nil {
		return "", nil, err
	}
	_, body, err := splitFrontmatter(data)
	if err != nil {
		return "", nil, err
	}
	// The folder itself may be a link (a skill kept elsewhere and linked
	// in); what it holds is walked without following further links, at
	// most maxEntries entries.
	root, err := s.pol.Check(s.Dir)
	if err != nil {
		return body, nil, nil
	}
	var files []string
	seen := 0
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == root {
			return nil
		}
		if seen++; seen > maxEntries {
			return filepath.SkipAll
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if rel, _ := filepath.Rel(root, p); rel != "SKILL.md" {
			if len(files) >= maxSkillFiles {
				return filepath.SkipAll
			}
			files = append(files, rel)
		}
		return nil
	})
	sort.Strings(files)
	return body, files, nil
}
