package render

import (
	"errors"
	"fmt"
	"maps"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/lookout-operator/lookout/internal/render/alertmanager"
	"github.com/lookout-operator/lookout/internal/render/alertmanager/amconfig"
	"github.com/lookout-operator/lookout/internal/render/scrape"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// AlertmanagerInputs is everything rendering one Alertmanager needs.
type AlertmanagerInputs struct {
	Alertmanager *monitoringv1.Alertmanager
	// UserConfig is the data of the user's config Secret (spec.configSecret, else
	// alertmanager-<name>); nil when it does not exist.
	UserConfig map[string][]byte
	// Global is the AlertmanagerConfig spec.alertmanagerConfiguration names, nil when unset.
	Global *monitoringv1alpha1.AlertmanagerConfig
	// Configs are the AlertmanagerConfigs the Alertmanager selects.
	Configs []*monitoringv1alpha1.AlertmanagerConfig
	// Secrets and ConfigMaps the configs reference, keyed "namespace/name"; absent when
	// they do not exist.
	Secrets    map[string]*corev1.Secret
	ConfigMaps map[string]*corev1.ConfigMap
	// ReloaderImage is the image of the config-reloader containers.
	ReloaderImage string
}

// AlertmanagerDesired is the rendered state of one Alertmanager.
type AlertmanagerDesired struct {
	// Objects in the order they are applied.
	Objects []alertmanager.Object
	// Config is the uncompressed alertmanager.yaml.
	Config []byte
	// Verdicts, one per selected AlertmanagerConfig (Kind "AlertmanagerConfig"); made anew by
	// every render.
	Verdicts []scrape.Verdict
}

// Alertmanager renders one Alertmanager: its merged, validated config and its objects. A
// spec or base config that cannot be rendered is a *SpecError: nothing is applied, and
// the Alertmanager keeps running with the last good config.
func Alertmanager(in AlertmanagerInputs) (*AlertmanagerDesired, error) {
	am := in.Alertmanager
	if err := alertmanager.Validate(am); err != nil {
		var se *workload.SpecError
		if errors.As(err, &se) {
			return nil, &SpecError{Reason: se.Reason, Message: se.Message}
		}
		return nil, &SpecError{Reason: "InvalidSpec", Message: err.Error()}
	}
	res, err := amconfig.Generate(amconfig.Input{
		Alertmanager: am, Base: in.UserConfig, Global: in.Global, Configs: in.Configs,
		Secrets: in.Secrets, ConfigMaps: in.ConfigMaps,
	})
	var base *amconfig.BaseConfigError
	if errors.As(err, &base) {
		return nil, &SpecError{Reason: base.Reason, Message: base.Message}
	}
	if err != nil {
		return nil, &SpecError{Reason: "InvalidConfig", Message: err.Error()}
	}
	gz, err := Gzip(res.Config)
	if err != nil {
		return nil, err
	}
	// Every other key of the user's Secret (templates) goes next to the config.
	files := maps.Clone(in.UserConfig)
	delete(files, alertmanager.UserConfigKey)
	delete(files, alertmanager.ConfigSecretKey)
	if in.Global != nil {
		// With spec.alertmanagerConfiguration the user Secret is not the base: only the
		// templates it names are copied.
		files = nil
	}
	for name, content := range res.Files {
		if files == nil {
			files = map[string][]byte{}
		}
		files[name] = content
	}
	objs, err := alertmanager.Objects(am, alertmanager.Options{ConfigGzip: gz, Files: files, ReloaderImage: in.ReloaderImage})
	if err != nil {
		var se *workload.SpecError
		if errors.As(err, &se) {
			return nil, &SpecError{Reason: se.Reason, Message: se.Message}
		}
		return nil, &SpecError{Reason: "InvalidSpec", Message: fmt.Sprintf("render objects: %v", err)}
	}
	verdicts := make([]scrape.Verdict, len(res.Verdicts))
	for i, v := range res.Verdicts {
		verdicts[i] = scrape.Verdict(v)
	}
	return &AlertmanagerDesired{Objects: objs, Config: res.Config, Verdicts: verdicts}, nil
}
