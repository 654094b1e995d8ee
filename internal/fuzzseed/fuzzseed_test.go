package fuzzseed

import "testing"

func TestEncode(t *testing.T) {
	tests := []struct {
		name   string
		values []any
		want   string
		err    bool
	}{
		{"bytes", []any{[]byte("a\x00\"")}, "go test fuzz v1\n[]byte(\"a\\x00\\\"\")\n", false},
		{"string and bool", []any{"1K", true}, "go test fuzz v1\nstring(\"1K\")\nbool(true)\n", false},
		{"integers", []any{uint32(7), int64(-3), uint8(255)}, "go test fuzz v1\nuint32(7)\nint64(-3)\nuint8(255)\n", false},
		{"nothing", nil, "go test fuzz v1\n", false},
		{"unsupported", []any{1.5}, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Encode(tc.values...)
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("Encode = %q, %v; want %q (error %v)", got, err, tc.want, tc.err)
			}
		})
	}
}
