package scrape

import (
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// Discovery of AWS machines: EC2 instances and Lightsail instances. Without an access key
// pair Prometheus uses the pod's AWS credentials (IRSA, instance profile).

// ec2SDConfig is one ec2_sd_configs entry.
type ec2SDConfig struct {
	Region    string     `yaml:"region,omitempty"`
	AccessKey string     `yaml:"access_key,omitempty"`
	SecretKey string     `yaml:"secret_key,omitempty"`
	RoleARN   string     `yaml:"role_arn,omitempty"`
	Filters   []sdFilter `yaml:"filters,omitempty"`
	Shared    sdShared   `yaml:",inline"`
}

// ec2 renders one EC2 discovery config. As with the existing operator, the filters (v2.3) and
// the HTTP client's follow_redirects, enable_http2 and tls_config (v2.41) are left out with a
// warning on a Prometheus that does not know them.
func (s *sdContext) ec2(field string, c *monitoringv1alpha1.EC2SDConfig) (ec2SDConfig, *rejection) {
	out := ec2SDConfig{Region: deref(c.Region), RoleARN: deref(c.RoleARN), Filters: sdFilters(c.Filters)}
	var rej *rejection
	if out.AccessKey, out.SecretKey, rej = s.awsKeys(field, c.AccessKey, c.SecretKey); rej != nil {
		return ec2SDConfig{}, rej
	}
	if out.Shared, rej = s.shared(field, c); rej != nil {
		return ec2SDConfig{}, rej
	}
	hc := &out.Shared.HTTPClient
	s.drop(field+".filters", sdVersion{2, 3, 0}, out.Filters != nil, func() { out.Filters = nil })
	s.drop(field+".followRedirects", sdVersion{2, 41, 0}, hc.FollowRedirects != nil, func() { hc.FollowRedirects = nil })
	s.drop(field+".enableHTTP2", sdVersion{2, 41, 0}, hc.EnableHTTP2 != nil, func() { hc.EnableHTTP2 = nil })
	s.drop(field+".tlsConfig", sdVersion{2, 41, 0}, hc.TLSConfig != nil, func() { hc.TLSConfig = nil })
	return out, nil
}

// lightsailSDConfig is one lightsail_sd_configs entry.
type lightsailSDConfig struct {
	Region    string   `yaml:"region,omitempty"`
	Endpoint  string   `yaml:"endpoint,omitempty"`
	AccessKey string   `yaml:"access_key,omitempty"`
	SecretKey string   `yaml:"secret_key,omitempty"`
	RoleARN   string   `yaml:"role_arn,omitempty"`
	Shared    sdShared `yaml:",inline"`
}

func (s *sdContext) lightsail(field string, c *monitoringv1alpha1.LightSailSDConfig) (lightsailSDConfig, *rejection) {
	out := lightsailSDConfig{Region: deref(c.Region), Endpoint: deref(c.Endpoint), RoleARN: deref(c.RoleARN)}
	var rej *rejection
	if out.AccessKey, out.SecretKey, rej = s.awsKeys(field, c.AccessKey, c.SecretKey); rej != nil {
		return lightsailSDConfig{}, rej
	}
	out.Shared, rej = s.shared(field, c)
	return out, rej
}

// awsKeys reads an AWS access key pair. The existing operator writes the keys only as a pair
// and drops a lone one without a word, leaving Prometheus on the pod's credentials; Lookout
// refuses a lone one by name instead.
func (s *sdContext) awsKeys(field string, access, secret *corev1.SecretKeySelector) (string, string, *rejection) {
	switch {
	case access == nil && secret == nil:
		return "", "", nil
	case access == nil || secret == nil:
		return "", "", reject(ReasonInvalidConfig, "%s: accessKey and secretKey go together: set both, or neither to use the pod's AWS credentials", field)
	}
	a, rej := s.secret(field+".accessKey", access)
	if rej != nil {
		return "", "", rej
	}
	k, rej := s.secret(field+".secretKey", secret)
	if rej != nil {
		return "", "", rej
	}
	return a, k, nil
}
