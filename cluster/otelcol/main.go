// A minimal OpenTelemetry Collector for Kinetic's tests: the OTLP receiver (gRPC and HTTP), the
// debug exporter, and `jsonfile`, an exporter of ours that appends each batch of spans to a file
// as one line of OTLP JSON (the contrib file exporter's module needs a module the registry
// refuses). Built by cluster/otelcol/build.mjs from the Go module registry; the versions are in
// cluster/versions.mjs.
package main

import (
	"context"
	"errors"
	"log"
	"os"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/debugexporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

func factories() (otelcol.Factories, error) {
	receivers, err := otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory())
	if err != nil {
		return otelcol.Factories{}, err
	}
	exporters, err := otelcol.MakeFactoryMap[exporter.Factory](debugexporter.NewFactory(), jsonFileFactory())
	if err != nil {
		return otelcol.Factories{}, err
	}
	return otelcol.Factories{
		Receivers: receivers,
		Exporters: exporters,
		Telemetry: otelconftelemetry.NewFactory(),
	}, nil
}

func main() {
	settings := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{
			Command:     "kinetic-otelcol",
			Description: "Kinetic's test collector: OTLP in, debug and file out",
			Version:     "kinetic",
		},
		Factories: factories,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory()},
			},
		},
	}
	if err := otelcol.NewCommand(settings).Execute(); err != nil {
		log.Fatal(err)
	}
}

// jsonFileConfig: `path` is the file each batch of spans is appended to, one OTLP JSON line each.
type jsonFileConfig struct {
	Path string `mapstructure:"path"`
}

func jsonFileFactory() exporter.Factory {
	return exporter.NewFactory(
		component.MustNewType("jsonfile"),
		func() component.Config { return &jsonFileConfig{} },
		exporter.WithTraces(createJSONFileTraces, component.StabilityLevelDevelopment),
	)
}

func createJSONFileTraces(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Traces, error) {
	c := cfg.(*jsonFileConfig)
	if c.Path == "" {
		return nil, errors.New("jsonfile: path is required")
	}
	var mu sync.Mutex
	marshaler := &ptrace.JSONMarshaler{}
	push := func(_ context.Context, td ptrace.Traces) error {
		line, err := marshaler.MarshalTraces(td)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(c.Path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.Write(append(line, '\n')); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	return exporterhelper.NewTraces(ctx, set, cfg, push)
}
