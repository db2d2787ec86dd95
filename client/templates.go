package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/pristinedb/pristine/api"
)

// Template build statuses of api.TemplateAnswer.Status.
const (
	StatusReady    = "ready"    // the template exists
	StatusBuild    = "build"    // the caller builds it: the connection fields are set
	StatusBuilding = "building" // someone else is building it
	StatusFailed   = "failed"   // the build failed or was aborted
)

// BeginTemplate asks to build the template req describes. The answer's
// Status says what to do: StatusReady (nothing), StatusBuild (run the
// migrations against the connection in the answer, then FinishTemplate or
// AbortTemplate) or StatusBuilding (WaitTemplate).
func (c *Client) BeginTemplate(ctx context.Context, req api.TemplateRequest) (*api.TemplateAnswer, error) {
	return c.template(ctx, "POST", "/v1/templates", req)
}

// FinishTemplate stops the template server of a build session cleanly and
// publishes the template.
func (c *Client) FinishTemplate(ctx context.Context, hash string) (*api.TemplateAnswer, error) {
	return c.template(ctx, "PUT", "/v1/templates/"+url.PathEscape(hash), nil)
}

// AbortTemplate throws a build session away; processes waiting for it are
// told the build failed.
func (c *Client) AbortTemplate(ctx context.Context, hash string) error {
	_, err := c.template(ctx, "DELETE", "/v1/templates/"+url.PathEscape(hash), nil)
	return err
}

// WaitTemplate looks a template up by name, hash or key, waiting up to wait
// while someone builds it. The answer's Status is StatusReady,
// StatusBuilding (still building after wait) or StatusFailed.
func (c *Client) WaitTemplate(ctx context.Context, ref string, wait time.Duration) (*api.TemplateAnswer, error) {
	path := "/v1/templates/" + url.PathEscape(ref)
	if wait > 0 {
		path += "?wait=" + strconv.FormatFloat(wait.Seconds(), 'f', 3, 64)
	}
	return c.template(ctx, "GET", path, nil)
}

// template does a request of the template API, whose 201, 410 and 423
// answers carry a TemplateAnswer rather than an error.
func (c *Client) template(ctx context.Context, method, path string, body any) (*api.TemplateAnswer, error) {
	resp, err := c.roundTrip(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	switch resp.StatusCode {
	case http.StatusOK, http.StatusCreated, http.StatusGone, http.StatusLocked:
		var a api.TemplateAnswer
		if err := json.Unmarshal(b, &a); err != nil {
			return nil, fmt.Errorf("%s %s: read answer: %w", method, path, err)
		}
		return &a, nil
	}
	var eb api.ErrorBody
	if json.Unmarshal(b, &eb) != nil || eb.Error == "" {
		eb.Error = fmt.Sprintf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(b))
	}
	return nil, &APIError{Status: resp.StatusCode, Message: eb.Error, Code: eb.Code}
}
