package main

// Tests of the Helm behaviour helmrender reproduces (values merging, the
// Helm-only template functions). Run: tests/deploy/run_all.sh renderer.

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func mustYAML(t *testing.T, s string) map[string]interface{} {
	t.Helper()
	m, err := parseYAMLMap([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCoalesceLikeHelm(t *testing.T) {
	defaults := mustYAML(t, `
a: 1
m: {x: 1, y: 2, deep: {k: v}}
l: [1, 2]
gone: keep-me
`)
	user := mustYAML(t, `
m: {y: 3, deep: {k2: v2}}
l: [9]
gone: null
new: true
`)
	got := coalesce(user, defaults)
	want := mustYAML(t, `
a: 1
m: {x: 1, y: 3, deep: {k: v, k2: v2}}
l: [9]
new: true
`)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("coalesce:\n got %#v\nwant %#v", got, want)
	}
	// defaults are not modified
	if _, ok := defaults["gone"]; !ok {
		t.Fatal("coalesce modified the defaults")
	}
}

func TestLaterValuesFilesWin(t *testing.T) {
	a := mustYAML(t, `{x: {a: 1, b: 1}}`)
	b := mustYAML(t, `{x: {b: 2}}`)
	got := mergeMaps(a, b)
	if !reflect.DeepEqual(got, mustYAML(t, `{x: {a: 1, b: 2}}`)) {
		t.Fatalf("mergeMaps: %#v", got)
	}
}

func TestNumbersAreFloat64LikeHelm(t *testing.T) {
	m := mustYAML(t, `{port: 9687, ratio: 0.25}`)
	if _, ok := m["port"].(float64); !ok {
		t.Fatalf("port is %T, Helm gives float64", m["port"])
	}
}

func writeChart(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func render(t *testing.T, files map[string]string, values ...string) (map[string]string, string, error) {
	t.Helper()
	dir := writeChart(t, files)
	var vfs []string
	for i, v := range values {
		p := filepath.Join(dir, "user", strings.Repeat("v", i+1)+".yaml")
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(v), 0o644)
		vfs = append(vfs, p)
	}
	docs, notes, _, err := run(options{chartDir: dir, release: "rel", namespace: "ns",
		valueFiles: vfs, kubeVersion: "v1.31.0"})
	out := map[string]string{}
	for _, d := range docs {
		out[d.name] = strings.TrimSpace(d.text)
	}
	return out, notes, err
}

const chartYAML = "apiVersion: v2\nname: c\nversion: 1.2.3\nappVersion: \"4.5\"\n"

func TestHelmFunctions(t *testing.T) {
	out, notes, err := render(t, map[string]string{
		"Chart.yaml":       chartYAML,
		"values.yaml":      "name: world\nlist: [a, b]\ngreeting: 'hello {{ .Values.name }}'\n",
		"files/a.yml":      "k: 1\n",
		"files/b.yml":      "k: 2\n",
		"files/c.txt":      "x",
		"templates/_h.tpl": `{{- define "c.hello" -}}hi {{ .Values.name }}{{- end -}}`,
		"templates/t.yaml": `include: {{ include "c.hello" . }}
tpl: {{ tpl .Values.greeting . }}
toYaml: {{ toYaml .Values.list | nindent 2 }}
fromYaml: {{ (.Files.Get "files/a.yml" | fromYaml).k }}
glob: {{ range $p, $_ := .Files.Glob "files/*.yml" }}{{ $p }} {{ end }}
missing: "{{ .Values.nope }}"
release: {{ .Release.Name }}/{{ .Release.Namespace }}/{{ .Release.Service }}
chart: {{ .Chart.Name }}-{{ .Chart.Version }}-{{ .Chart.AppVersion }}
template: {{ .Template.Name }} {{ .Template.BasePath }}
caps: {{ .Capabilities.KubeVersion.Version }} {{ .Capabilities.APIVersions.Has "apps/v1" }}
json: {{ (fromJson "{\"a\": [1]}").a | toJson }}`,
		"templates/NOTES.txt": "notes for {{ .Release.Name }}",
	})
	if err != nil {
		t.Fatal(err)
	}
	got := out["c/templates/t.yaml"]
	for _, want := range []string{
		"include: hi world", "tpl: hello world", "toYaml: \n  - a\n  - b", "fromYaml: 1",
		"glob: files/a.yml files/b.yml ", `missing: ""`, "release: rel/ns/Helm",
		"chart: c-1.2.3-4.5", "template: c/templates/t.yaml c/templates", "caps: v1.31.0 true",
		"json: [1]",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if _, ok := out["c/templates/_h.tpl"]; ok {
		t.Error("a partial was rendered")
	}
	if _, ok := out["c/templates/NOTES.txt"]; ok || notes != "notes for rel" {
		t.Errorf("NOTES: %q", notes)
	}
}

func TestRequiredAndFailStopRendering(t *testing.T) {
	_, _, err := render(t, map[string]string{
		"Chart.yaml":       chartYAML,
		"values.yaml":      "x: \"\"\n",
		"templates/t.yaml": `{{ required "x is required" .Values.x }}`,
	})
	if err == nil || !strings.Contains(err.Error(), "x is required") {
		t.Fatalf("required: %v", err)
	}
	_, _, err = render(t, map[string]string{
		"Chart.yaml":       chartYAML,
		"templates/t.yaml": `{{ fail "boom" }}`,
	})
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("fail: %v", err)
	}
}

func TestUserValuesAndNullDeletion(t *testing.T) {
	out, _, err := render(t, map[string]string{
		"Chart.yaml":       chartYAML,
		"values.yaml":      "m: {a: 1, b: 2}\n",
		"templates/t.yaml": `{{ toYaml .Values.m }}`,
	}, "m: {b: null, c: 3}\n", "m: {c: 4}\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := out["c/templates/t.yaml"]; got != "a: 1\nc: 4" {
		t.Fatalf("got %q", got)
	}
}

func TestSubchartValuesAndSharedTemplates(t *testing.T) {
	sub := writeChart(t, map[string]string{
		"Chart.yaml":         "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"values.yaml":        "port: 1\nname: s\n",
		"templates/_h.tpl":   `{{- define "sub.port" -}}{{ .Values.port }}{{- end -}}`,
		"templates/own.yaml": `own: {{ .Values.name }}-{{ .Values.port }}-{{ .Chart.Name }}`,
	})
	parent := writeChart(t, map[string]string{
		"Chart.yaml":  chartYAML,
		"values.yaml": "sub: {port: 2}\n",
		"templates/p.yaml": `fromParent: {{ include "sub.port" (dict "Values" .Values.sub) }}
merged: {{ .Values.sub.name }}`,
	})
	docs, _, _, err := run(options{chartDir: parent, release: "r", namespace: "n",
		subcharts: []string{"sub=" + sub}, kubeVersion: "v1.31.0"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range docs {
		got[d.name] = strings.TrimSpace(d.text)
	}
	if got["c/charts/sub/templates/own.yaml"] != "own: s-2-sub" {
		t.Errorf("subchart: %q", got["c/charts/sub/templates/own.yaml"])
	}
	if got["c/templates/p.yaml"] != "fromParent: 2\nmerged: s" {
		t.Errorf("parent: %q", got["c/templates/p.yaml"])
	}
}
