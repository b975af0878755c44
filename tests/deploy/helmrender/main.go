// helmrender renders a Helm chart the way `helm template` does, for the tests
// of this repository, where no Helm binary can be installed. It uses Go's
// text/template with sprig (both from Debian, GOPATH mode) and implements the
// part of Helm the chart relies on:
//
//   - values: values.yaml coalesced with -f files (later files win, maps merge,
//     null deletes a key), numbers as float64 like Helm's sigs.k8s.io/yaml;
//     subcharts (--subchart NAME=DIR) get .Values.NAME coalesced with their own
//     values.yaml, and the parent sees the coalesced map;
//   - objects: .Values .Release .Chart .Capabilities .Template .Files .Subcharts;
//   - functions: sprig (less env/expandenv, as in Helm) plus include, tpl,
//     required, toYaml, fromYaml, fromYamlArray, toJson, fromJson,
//     fromJsonArray, lookup (always empty, as in `helm template`);
//   - missingkey=zero and "<no value>" removal, partials (_*.tpl) not rendered,
//     NOTES.txt rendered only with --notes-out.
//
// Usage:
//
//	helmrender --chart DIR [-f values.yaml]... [--release NAME] [--namespace NS]
//	           [--subchart NAME=DIR]... [--values-out FILE] [--notes-out FILE]
//
// Output: the manifests on stdout, "---\n# Source: <template>\n" before each.
// Exit 1 with the template error on stderr when rendering fails (required,
// fail, syntax, ...).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	yaml "gopkg.in/yaml.v2"
)

// ---------------------------------------------------------------- values

// normalize converts what yaml.v2 returns into JSON-like data, as Helm's
// sigs.k8s.io/yaml does: map[string]interface{}, []interface{}, float64.
func normalize(v interface{}) (interface{}, error) {
	b, err := json.Marshal(toStringKeys(v))
	if err != nil {
		return nil, err
	}
	var out interface{}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func toStringKeys(v interface{}) interface{} {
	switch t := v.(type) {
	case map[interface{}]interface{}:
		m := make(map[string]interface{}, len(t))
		for k, val := range t {
			m[fmt.Sprint(k)] = toStringKeys(val)
		}
		return m
	case map[string]interface{}:
		m := make(map[string]interface{}, len(t))
		for k, val := range t {
			m[k] = toStringKeys(val)
		}
		return m
	case []interface{}:
		l := make([]interface{}, len(t))
		for i, val := range t {
			l[i] = toStringKeys(val)
		}
		return l
	default:
		return v
	}
}

func parseYAMLMap(data []byte) (map[string]interface{}, error) {
	var raw interface{}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	if raw == nil {
		return map[string]interface{}{}, nil
	}
	n, err := normalize(raw)
	if err != nil {
		return nil, err
	}
	m, ok := n.(map[string]interface{})
	if !ok {
		return nil, errors.New("top level is not a map")
	}
	return m, nil
}

// mergeMaps: b over a (Helm's cli values merging of several -f files).
func mergeMaps(a, b map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if vm, ok := v.(map[string]interface{}); ok {
			if om, ok := out[k].(map[string]interface{}); ok {
				out[k] = mergeMaps(om, vm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// coalesce: user values win over chart defaults; maps merge recursively; a
// user null removes the key (Helm's CoalesceTables).
func coalesce(user, defaults map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{})
	for k, v := range defaults {
		out[k] = deepCopy(v)
	}
	for k, v := range user {
		if v == nil {
			delete(out, k)
			continue
		}
		if um, ok := v.(map[string]interface{}); ok {
			if dm, ok := out[k].(map[string]interface{}); ok {
				out[k] = coalesce(um, dm)
				continue
			}
		}
		out[k] = deepCopy(v)
	}
	return out
}

func deepCopy(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		m := make(map[string]interface{}, len(t))
		for k, val := range t {
			m[k] = deepCopy(val)
		}
		return m
	case []interface{}:
		l := make([]interface{}, len(t))
		for i, val := range t {
			l[i] = deepCopy(val)
		}
		return l
	default:
		return v
	}
}

// ---------------------------------------------------------------- chart

// Metadata mirrors the fields of Helm's chart.Metadata that templates use.
type Metadata struct {
	Name         string
	Version      string
	AppVersion   string
	Description  string
	Type         string
	KubeVersion  string
	APIVersion   string
	Home         string
	Keywords     []string
	Annotations  map[string]string
	Dependencies []map[string]interface{}
}

// Files is .Files: every chart file outside templates/ and charts/.
type Files map[string][]byte

func (f Files) Get(name string) string      { return string(f[name]) }
func (f Files) GetBytes(name string) []byte { return f[name] }
func (f Files) Glob(pattern string) Files {
	out := Files{}
	for name, data := range f {
		if ok, _ := path.Match(pattern, name); ok {
			out[name] = data
		}
	}
	return out
}
func (f Files) Lines(name string) []string {
	s := strings.TrimRight(string(f[name]), "\n")
	if s == "" {
		return []string{}
	}
	return strings.Split(s, "\n")
}
func (f Files) AsConfig() string {
	m := map[string]string{}
	for k, v := range f {
		m[path.Base(k)] = string(v)
	}
	b, _ := yaml.Marshal(m)
	return strings.TrimSuffix(string(b), "\n")
}

// VersionSet is .Capabilities.APIVersions.
type VersionSet []string

func (v VersionSet) Has(s string) bool {
	for _, x := range v {
		if x == s {
			return true
		}
	}
	return false
}

type KubeVersion struct{ Version, Major, Minor, GitVersion string }

func (k KubeVersion) String() string { return k.Version }

type Capabilities struct {
	KubeVersion KubeVersion
	APIVersions VersionSet
	HelmVersion map[string]string
}

type chart struct {
	name      string // template name prefix, e.g. "parent/charts/sub"
	dir       string
	meta      Metadata
	values    map[string]interface{}
	files     Files
	templates map[string]string // full template name -> text
	subcharts []*chart
	alias     string // key of the subchart's values in the parent
}

func loadChart(dir, prefix string) (*chart, error) {
	c := &chart{dir: dir, files: Files{}, templates: map[string]string{}}
	raw, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return nil, err
	}
	var meta struct {
		APIVersion   string                   `yaml:"apiVersion"`
		Name         string                   `yaml:"name"`
		Version      string                   `yaml:"version"`
		AppVersion   string                   `yaml:"appVersion"`
		Description  string                   `yaml:"description"`
		Type         string                   `yaml:"type"`
		KubeVersion  string                   `yaml:"kubeVersion"`
		Home         string                   `yaml:"home"`
		Keywords     []string                 `yaml:"keywords"`
		Annotations  map[string]string        `yaml:"annotations"`
		Dependencies []map[string]interface{} `yaml:"dependencies"`
	}
	if err := yaml.Unmarshal(raw, &meta); err != nil {
		return nil, fmt.Errorf("%s/Chart.yaml: %v", dir, err)
	}
	if meta.APIVersion != "v2" || meta.Name == "" || meta.Version == "" {
		return nil, fmt.Errorf("%s/Chart.yaml: apiVersion v2, name and version are required", dir)
	}
	c.meta = Metadata{Name: meta.Name, Version: meta.Version, AppVersion: meta.AppVersion,
		Description: meta.Description, Type: meta.Type, KubeVersion: meta.KubeVersion,
		APIVersion: meta.APIVersion, Home: meta.Home, Keywords: meta.Keywords,
		Annotations: meta.Annotations, Dependencies: meta.Dependencies}
	if prefix == "" {
		prefix = meta.Name
	}
	c.name = prefix
	c.values = map[string]interface{}{}
	if data, err := os.ReadFile(filepath.Join(dir, "values.yaml")); err == nil {
		if c.values, err = parseYAMLMap(data); err != nil {
			return nil, fmt.Errorf("%s/values.yaml: %v", dir, err)
		}
	}
	err = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if info.IsDir() {
			if rel == "charts" {
				return filepath.SkipDir
			}
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		switch {
		case strings.HasPrefix(rel, "templates/"):
			c.templates[prefix+"/"+rel] = string(data)
		case rel == "Chart.yaml" || rel == "values.yaml" || rel == "values.schema.json" || rel == ".helmignore":
		default:
			c.files[rel] = data
		}
		return nil
	})
	return c, err
}

// ---------------------------------------------------------------- engine

type engine struct {
	tmpl  *template.Template
	depth int
}

func (e *engine) funcs() template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	f["include"] = func(name string, data interface{}) (string, error) {
		if e.depth > 1000 {
			return "", errors.New("include: recursion too deep")
		}
		e.depth++
		defer func() { e.depth-- }()
		var buf bytes.Buffer
		if err := e.tmpl.ExecuteTemplate(&buf, name, data); err != nil {
			return "", err
		}
		return buf.String(), nil
	}
	f["tpl"] = func(text string, data interface{}) (string, error) {
		t, err := e.tmpl.Clone()
		if err != nil {
			return "", err
		}
		t, err = t.New("tpl").Option("missingkey=zero").Parse(text)
		if err != nil {
			return "", fmt.Errorf("tpl: %v", err)
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, data); err != nil {
			return "", fmt.Errorf("tpl: %v", err)
		}
		return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
	}
	f["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil {
			return nil, errors.New(msg)
		}
		if s, ok := v.(string); ok && s == "" {
			return nil, errors.New(msg)
		}
		return v, nil
	}
	f["toYaml"] = func(v interface{}) string {
		n, err := normalize(v)
		if err != nil {
			return ""
		}
		b, err := yaml.Marshal(n)
		if err != nil {
			return ""
		}
		return strings.TrimSuffix(string(b), "\n")
	}
	f["fromYaml"] = func(s string) map[string]interface{} {
		m, err := parseYAMLMap([]byte(s))
		if err != nil {
			return map[string]interface{}{"Error": err.Error()}
		}
		return m
	}
	f["fromYamlArray"] = func(s string) []interface{} {
		var raw interface{}
		if err := yaml.Unmarshal([]byte(s), &raw); err != nil {
			return []interface{}{err.Error()}
		}
		n, _ := normalize(raw)
		l, _ := n.([]interface{})
		return l
	}
	f["toJson"] = func(v interface{}) string {
		b, _ := json.Marshal(toStringKeys(v))
		return string(b)
	}
	f["fromJson"] = func(s string) map[string]interface{} {
		m := map[string]interface{}{}
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			m["Error"] = err.Error()
		}
		return m
	}
	f["fromJsonArray"] = func(s string) []interface{} {
		var l []interface{}
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			return []interface{}{err.Error()}
		}
		return l
	}
	f["lookup"] = func(apiVersion, kind, namespace, name string) (map[string]interface{}, error) {
		return map[string]interface{}{}, nil
	}
	return f
}

type options struct {
	chartDir, release, namespace, valuesOut, notesOut string
	valueFiles, subcharts                             []string
	kubeVersion                                       string
}

type rendered struct {
	name, text string
}

func run(o options) ([]rendered, string, map[string]interface{}, error) {
	top, err := loadChart(o.chartDir, "")
	if err != nil {
		return nil, "", nil, err
	}
	for _, s := range o.subcharts {
		parts := strings.SplitN(s, "=", 2)
		if len(parts) != 2 {
			return nil, "", nil, fmt.Errorf("--subchart %q: want NAME=DIR", s)
		}
		sub, err := loadChart(parts[1], "")
		if err != nil {
			return nil, "", nil, err
		}
		// reload with Helm's template prefix for subcharts
		sub, err = loadChart(parts[1], top.meta.Name+"/charts/"+sub.meta.Name)
		if err != nil {
			return nil, "", nil, err
		}
		sub.alias = parts[0]
		top.subcharts = append(top.subcharts, sub)
	}

	user := map[string]interface{}{}
	for _, vf := range o.valueFiles {
		data, err := os.ReadFile(vf)
		if err != nil {
			return nil, "", nil, err
		}
		m, err := parseYAMLMap(data)
		if err != nil {
			return nil, "", nil, fmt.Errorf("%s: %v", vf, err)
		}
		user = mergeMaps(user, m)
	}
	values := coalesce(user, top.values)
	for _, sub := range top.subcharts {
		sv, _ := values[sub.alias].(map[string]interface{})
		if sv == nil {
			sv = map[string]interface{}{}
		}
		merged := coalesce(sv, sub.values)
		if g, ok := values["global"]; ok {
			merged["global"] = deepCopy(g)
		}
		values[sub.alias] = merged
	}

	e := &engine{}
	e.tmpl = template.New("gotpl").Option("missingkey=zero").Funcs(e.funcs())
	all := map[string]*chart{}
	var names []string
	for _, c := range append([]*chart{top}, top.subcharts...) {
		for name, text := range c.templates {
			if _, err := e.tmpl.New(name).Parse(text); err != nil {
				return nil, "", nil, err
			}
			all[name] = c
			names = append(names, name)
		}
	}
	sort.Strings(names)

	caps := Capabilities{
		KubeVersion: KubeVersion{Version: o.kubeVersion, Major: "1", Minor: "31", GitVersion: o.kubeVersion},
		APIVersions: VersionSet{"v1", "apps/v1", "policy/v1", "networking.k8s.io/v1",
			"monitoring.coreos.com/v1"},
		HelmVersion: map[string]string{"Version": "v3.16.0"},
	}
	release := map[string]interface{}{"Name": o.release, "Namespace": o.namespace,
		"Service": "Helm", "IsInstall": true, "IsUpgrade": false, "Revision": 1}
	contexts := map[*chart]map[string]interface{}{}
	subctx := map[string]interface{}{}
	for _, sub := range top.subcharts {
		contexts[sub] = map[string]interface{}{"Values": values[sub.alias], "Release": release,
			"Chart": sub.meta, "Capabilities": caps, "Files": sub.files,
			"Subcharts": map[string]interface{}{}}
		subctx[sub.alias] = contexts[sub]
	}
	contexts[top] = map[string]interface{}{"Values": values, "Release": release, "Chart": top.meta,
		"Capabilities": caps, "Files": top.files, "Subcharts": subctx}

	var out []rendered
	notes := ""
	for _, name := range names {
		base := path.Base(name)
		if strings.HasPrefix(base, "_") {
			continue
		}
		c := all[name]
		isNotes := base == "NOTES.txt"
		if isNotes && c != top {
			continue
		}
		ctx := map[string]interface{}{}
		for k, v := range contexts[c] {
			ctx[k] = v
		}
		ctx["Template"] = map[string]interface{}{"Name": name, "BasePath": c.name + "/templates"}
		var buf bytes.Buffer
		if err := e.tmpl.ExecuteTemplate(&buf, name, ctx); err != nil {
			return nil, "", nil, err
		}
		text := strings.ReplaceAll(buf.String(), "<no value>", "")
		if isNotes {
			notes = text
			continue
		}
		out = append(out, rendered{name, text})
	}
	return out, notes, values, nil
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

func main() {
	var o options
	var vf, sc multi
	flag.StringVar(&o.chartDir, "chart", "", "chart directory")
	flag.Var(&vf, "f", "values file (repeatable; later files win)")
	flag.Var(&vf, "values", "values file (same as -f)")
	flag.Var(&sc, "subchart", "NAME=DIR: a dependency of the chart (repeatable)")
	flag.StringVar(&o.release, "release", "release-name", "release name")
	flag.StringVar(&o.namespace, "namespace", "default", "release namespace")
	flag.StringVar(&o.valuesOut, "values-out", "", "write the coalesced values as JSON to this file")
	flag.StringVar(&o.notesOut, "notes-out", "", "write the rendered NOTES.txt to this file")
	flag.StringVar(&o.kubeVersion, "kube-version", "v1.31.0", ".Capabilities.KubeVersion")
	flag.Parse()
	if o.chartDir == "" {
		fmt.Fprintln(os.Stderr, "usage: helmrender --chart DIR [-f values.yaml]...")
		os.Exit(2)
	}
	o.valueFiles, o.subcharts = vf, sc
	docs, notes, values, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
	if o.valuesOut != "" {
		b, _ := json.MarshalIndent(values, "", "  ")
		if err := os.WriteFile(o.valuesOut, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "Error:", err)
			os.Exit(1)
		}
	}
	if o.notesOut != "" {
		if err := os.WriteFile(o.notesOut, []byte(notes), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "Error:", err)
			os.Exit(1)
		}
	}
	for _, d := range docs {
		if strings.TrimSpace(d.text) == "" {
			continue
		}
		fmt.Printf("---\n# Source: %s\n%s\n", d.name, strings.TrimSpace(d.text))
	}
}
