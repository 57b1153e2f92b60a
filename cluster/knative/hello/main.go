// A tiny HTTP server for checking a Knative install: GET / answers a greeting, a POST (a
// CloudEvent in binary or structured mode) is kept in memory, GET /events lists what was kept.
package main

import (
	"encoding/json"
	"io"
	"log"
	"net/http"
	"os"
	"sync"
)

type received struct {
	Type   string `json:"type"`
	Source string `json:"source"`
	ID     string `json:"id"`
	Data   string `json:"data"`
}

var (
	mu     sync.Mutex
	events []received
)

func main() {
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	greeting := os.Getenv("GREETING")
	if greeting == "" {
		greeting = "hello from kinetic"
	}
	http.HandleFunc("/events", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("content-type", "application/json")
		_ = json.NewEncoder(w).Encode(append([]received{}, events...))
	})
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			_, _ = io.WriteString(w, greeting+"\n")
			return
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 64*1024))
		ev := received{Type: r.Header.Get("ce-type"), Source: r.Header.Get("ce-source"), ID: r.Header.Get("ce-id"), Data: string(body)}
		mu.Lock()
		events = append(events, ev)
		if len(events) > 100 {
			events = events[len(events)-100:]
		}
		mu.Unlock()
		log.Printf("event type=%s source=%s id=%s", ev.Type, ev.Source, ev.ID)
		w.WriteHeader(http.StatusAccepted)
	})
	log.Printf("listening on :%s", port)
	log.Fatal(http.ListenAndServe(":"+port, nil))
}
